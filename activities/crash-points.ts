/**
 * Crash points: the worker's test mode for the crash-matrix suite.
 *
 * Every effect boundary of the worker — before and after a model request, before a tool process
 * starts, once it runs and after it ends, after every activity completes, while accepting steering
 * and abort — calls `crashPoint(name)`. Normally that does nothing. With `AGENT_CRASH_AT=N` the
 * worker counts the boundaries it passes, appends each to `AGENT_CRASH_LOG` (one line:
 * `<n>\t<name>`), and at the N-th kills itself with SIGKILL: no cleanup, no completion reported,
 * exactly like a power cut. The suite derives the crash points from the log of an uninterrupted
 * run, so nobody picks them by hand. `AGENT_CRASH_AT_POINT=<name>#<k>` kills it at the k-th time it
 * reaches the boundary called `<name>` instead (for runs whose boundaries interleave differently
 * from one run to the next, like a session's concurrent workflows).
 */
import * as fs from 'node:fs';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import type { InjectedSinks } from '@temporalio/worker';
import type { CrashPointSinks } from '../common/crash-points';
import { parsed, settingsPart, text, variable, wholeNumber } from '../common/env-settings';

export interface CrashPointSettings {
  /** Crash at the N-th boundary passed (0: never). */
  at: number;
  /** Crash the k-th time the boundary `name` is reached. */
  point?: { name: string; times: number };
  /** Where every boundary passed is appended. */
  logFile?: string;
}

/** The crash test mode's variables (both workers). */
export const CRASH_POINTS_PART = settingsPart({
  title: 'Crash test mode',
  intro: "The crash-matrix suite's switches (`activities/crash-points.ts`); never set in a deployment.",
  variables: {
    at: variable(
      'AGENT_CRASH_AT',
      {
        description: 'the worker kills itself (SIGKILL) at the N-th effect boundary it passes',
        default: '`0` (never)',
        values: 'a whole number',
      },
      wholeNumber(0, { min: 0, max: Number.MAX_SAFE_INTEGER }),
    ),
    point: variable(
      'AGENT_CRASH_AT_POINT',
      {
        description: 'the worker kills itself the k-th time it reaches the boundary called `<name>`',
        default: 'none',
        values: '`<name>#<k>`',
      },
      parsed<CrashPointSettings['point']>(
        (value) => {
          const match = /^(.+)#(\d+)$/s.exec(value);
          if (!match) throw new Error(`${JSON.stringify(value)} is not <boundary name>#<k>`);
          return { name: match[1]!, times: Number(match[2]) };
        },
        () => undefined,
      ),
    ),
    logFile: variable(
      'AGENT_CRASH_LOG',
      {
        description: 'a file the worker appends every boundary it passes to (`<n>\\t<name>`)',
        default: 'none',
        values: 'a file path',
      },
      text(undefined),
    ),
  },
  build: ({ at, point, logFile }): CrashPointSettings => ({
    at,
    ...(point ? { point } : {}),
    ...(logFile ? { logFile } : {}),
  }),
});

let settings: CrashPointSettings = { at: 0 };
let passed = 0;
const reached = new Map<string, number>();

/** Sets this process's crash test mode (a worker does, from its settings, when it is created). */
export function configureCrashPoints(next: CrashPointSettings): void {
  settings = next;
}

/** True when this process runs in crash test mode (counting or crashing). */
export function crashTestMode(): boolean {
  return settings.at > 0 || settings.point !== undefined || settings.logFile !== undefined;
}

export function crashPoint(name: string): void {
  if (!crashTestMode()) return;
  passed += 1;
  const times = (reached.get(name) ?? 0) + 1;
  reached.set(name, times);
  if (settings.logFile) fs.appendFileSync(settings.logFile, `${passed}\t${name}\n`);
  const { point } = settings;
  if (passed === settings.at || (point && point.name === name && point.times === times)) {
    process.kill(process.pid, 'SIGKILL');
  }
}

/** Marks the end of every activity: the result exists but the server has not recorded it yet. */
export class CrashPointActivityInterceptor implements ActivityInboundCallsInterceptor {
  constructor(private readonly activityType: string) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const result = await next(input);
    crashPoint(`activity completed: ${this.activityType}`);
    return result;
  }
}

/** Workflow code reports message acceptance through this sink (not called during replay). */
export const crashPointSinks: InjectedSinks<CrashPointSinks> = {
  crashPoints: {
    reached: { fn: (_info, name: string) => crashPoint(name), callDuringReplay: false },
  },
};
