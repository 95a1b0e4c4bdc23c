/**
 * Stuck detection for the activities an operation waits on (limits: `common/stuck.ts`; the watchdog:
 * `../shared/stuck-watchdog.ts`). The verdict becomes the operation's `stuck` state (status query,
 * current details, `AgentStatus = "stuck"`), cleared as soon as the cause goes away.
 *
 * New in the command sequence (the watchdog's timer, probes, explicit activity ids), so it runs only
 * in operations that took the `stuck-detection` patch.
 */
import { metricMeter } from '@temporalio/workflow';
import { isPatched } from '../shared/patches';
import type { StuckState } from '../../common/stuck';
import { Watchdog, type WatchTarget } from '../shared/stuck-watchdog';
import type { OperationRun } from './state';
import { publishSearchAttributes, showDetails } from './visibility';

export { stuckReason, type WatchTarget } from '../shared/stuck-watchdog';

export const STUCK_DETECTION_PATCH = 'stuck-detection';

/** True in operations started with stuck detection (recorded once per run as a patch marker). */
export function stuckDetectionOn(): boolean {
  return isPatched(STUCK_DETECTION_PATCH);
}

const watchdogs = new WeakMap<OperationRun, Watchdog>();

/** Runs `run` (which schedules the activity `target.activityId`) under the run's stuck watchdog. */
export async function watchActivity<T>(op: OperationRun, target: WatchTarget, run: () => Promise<T>): Promise<T> {
  let watchdog = watchdogs.get(op);
  if (!watchdog) {
    watchdog = new Watchdog({
      get limits() {
        return op.settings.stuck;
      },
      get stuck() {
        return op.stuck;
      },
      setStuck: (stuck) => setStuck(op, stuck),
    });
    watchdogs.set(op, watchdog);
  }
  const waiting = `${target.waitingOn} on ${target.taskQueue}`;
  op.startWaiting(waiting);
  try {
    return await watchdog.watch(target, run);
  } finally {
    op.stopWaiting(waiting);
    if (op.stuck?.waitingOn === target.waitingOn) setStuck(op, undefined);
  }
}

const stuckCounter = () =>
  metricMeter.createCounter(
    'agent_operations_stuck_total',
    'operations',
    'Operations that became stuck (each time one did)',
  );

/** Sets or clears the stuck state and shows the change (search attribute, current details). */
export function setStuck(op: OperationRun, stuck: StuckState | undefined): void {
  const wasStuck = op.stuck !== undefined;
  if (!op.markStuck(stuck)) return;
  // The SDK emits workflow metrics only outside replay: a replayed verdict is not counted again.
  if (!wasStuck && stuck) stuckCounter().add(1);
  publishSearchAttributes(op, 'state');
  showDetails(op);
}
