/**
 * Crash points: the worker's test mode for the crash-matrix suite.
 *
 * Every effect boundary of the worker — before and after a model request, before a tool process
 * starts, once it runs and after it ends, after every activity completes, while accepting steering
 * and abort — calls `crashPoint(name)`. Normally that does nothing. With `AGENT_CRASH_AT=N` the
 * worker counts the boundaries it passes, appends each to `AGENT_CRASH_LOG` (one line:
 * `<n>\t<name>`), and at the N-th kills itself with SIGKILL: no cleanup, no completion reported,
 * exactly like a power cut. The suite derives the crash points from the log of an uninterrupted
 * run, so nobody picks them by hand.
 */
import * as fs from 'node:fs';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import type { InjectedSinks } from '@temporalio/worker';
import type { CrashPointSinks } from '../common/crash-points';

const crashAt = Number(process.env.AGENT_CRASH_AT ?? 0);
const logFile = process.env.AGENT_CRASH_LOG;
let passed = 0;

/** True when this process runs in crash test mode (counting or crashing). */
export const crashTestMode = crashAt > 0 || Boolean(logFile);

export function crashPoint(name: string): void {
  if (!crashTestMode) return;
  passed += 1;
  if (logFile) fs.appendFileSync(logFile, `${passed}\t${name}\n`);
  if (passed === crashAt) process.kill(process.pid, 'SIGKILL');
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
