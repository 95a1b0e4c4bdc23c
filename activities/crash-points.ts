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

const crashAt = Number(process.env.AGENT_CRASH_AT ?? 0);
const namedPoint = /^(.+)#(\d+)$/s.exec(process.env.AGENT_CRASH_AT_POINT ?? '');
const logFile = process.env.AGENT_CRASH_LOG;
let passed = 0;
const reached = new Map<string, number>();

/** True when this process runs in crash test mode (counting or crashing). */
export const crashTestMode = crashAt > 0 || Boolean(namedPoint) || Boolean(logFile);

export function crashPoint(name: string): void {
  if (!crashTestMode) return;
  passed += 1;
  const times = (reached.get(name) ?? 0) + 1;
  reached.set(name, times);
  if (logFile) fs.appendFileSync(logFile, `${passed}\t${name}\n`);
  if (passed === crashAt || (namedPoint && namedPoint[1] === name && Number(namedPoint[2]) === times)) {
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
