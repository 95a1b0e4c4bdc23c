/**
 * Stuck detection for the activities an operation waits on (limits: `common/stuck.ts`).
 *
 * `watchActivity` runs an activity and, beside it, a watch: when the activity has not finished
 * within `notStartedMs`, the brain's `probePendingActivity` asks the server about it (state,
 * attempt, last failure, pollers of its queue). The verdict — no worker polls the queue, not
 * started although workers poll it, retrying past the limits — becomes the operation's `stuck`
 * state (status query, current details, `AgentStatus = "stuck"`), looked at again every
 * `recheckMs` and cleared as soon as the cause goes away (a worker starts polling, the retry
 * succeeds, the activity finishes). The watched activity itself is untouched: same id, same
 * options, never scheduled twice.
 *
 * New in the command sequence (a timer per watched activity, probes, explicit activity ids), so it
 * runs only in operations that took the `stuck-detection` patch.
 */
import { CancellationScope, condition, patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { StuckLimits, StuckState, OpsActivities, PendingActivityProbe } from '../common/stuck';
import type { OperationRun } from './operation-state';
import { PROBE_ACTIVITY_OPTIONS } from './policies';
import { publishSearchAttributes, showDetails } from './visibility';

export const STUCK_DETECTION_PATCH = 'stuck-detection';

/** True in operations started with stuck detection (recorded once per run as a patch marker). */
export function stuckDetectionOn(): boolean {
  return patched(STUCK_DETECTION_PATCH);
}

export interface WatchTarget {
  /** The watched activity's id (it must be set explicitly to be found). */
  activityId: string;
  taskQueue: string;
  /** What the operation waits on, in words (`tool bash: npm test`, `model turn 3`). */
  waitingOn: string;
  /** The hands host the queue belongs to, when it is a host's own queue. */
  host?: string;
}

/** Most time between two looks at an activity (the wait doubles up to this while nothing changes). */
const CALM_RECHECK_CAP_MS = 10 * 60_000;

/** Runs `run` (which schedules the activity `target.activityId`) under the stuck watch. */
export async function watchActivity<T>(op: OperationRun, target: WatchTarget, run: () => Promise<T>): Promise<T> {
  op.waitingFor = `${target.waitingOn} on ${target.taskQueue}`;
  const work = run();
  let done = false;
  const finished = (): boolean => done;
  void work.then(
    () => (done = true),
    () => (done = true),
  );
  const watchScope = new CancellationScope();
  const watching = watchScope.run(() => watch(op, target, finished)).catch(() => undefined);
  try {
    return await work;
  } finally {
    done = true;
    watchScope.cancel();
    await watching;
    if (op.waitingFor === `${target.waitingOn} on ${target.taskQueue}`) op.waitingFor = undefined;
    if (op.stuck?.waitingOn === target.waitingOn) setStuck(op, undefined);
  }
}

async function watch(op: OperationRun, target: WatchTarget, finished: () => boolean): Promise<void> {
  const limits = op.settings.stuck;
  const recheckMs = limits.recheckMs ?? Math.min(limits.notStartedMs, 60_000);
  const since = Date.now();
  const { probePendingActivity } = proxyActivities<OpsActivities>({
    ...PROBE_ACTIVITY_OPTIONS,
    summary: `stuck check: ${target.waitingOn}`,
  });
  const info = workflowInfo();
  let wait = limits.notStartedMs;
  for (;;) {
    if (await condition(finished, wait)) return;
    const probe = await probePendingActivity({
      workflowId: info.workflowId,
      runId: info.runId,
      activityId: target.activityId,
      taskQueue: target.taskQueue,
    });
    if (finished()) return;
    const reason = stuckReason(probe, target, limits, Date.now() - since);
    if (reason) {
      const same = op.stuck?.reason === reason.reason;
      setStuck(op, {
        ...reason,
        waitingOn: target.waitingOn,
        since: same ? op.stuck!.since : new Date().toISOString(),
      });
      // Looked at again soon after a change, then less and less often: a run stuck for days keeps
      // its history small. Recovery does not wait for a look: the activity finishing ends the watch.
      wait = same ? Math.min(wait * 2, CALM_RECHECK_CAP_MS) : recheckMs;
    } else {
      setStuck(op, undefined);
      wait = Math.min(Math.max(wait, recheckMs) * 2, CALM_RECHECK_CAP_MS);
    }
  }
}

/** The verdict on one probe: why the operation is stuck on the activity, or undefined when it is not. */
export function stuckReason(
  probe: PendingActivityProbe,
  target: WatchTarget,
  limits: StuckLimits,
  elapsedMs: number,
): Pick<StuckState, 'reason' | 'lastFailure'> | undefined {
  if (probe.state === 'absent' || probe.state === 'cancel-requested') return undefined;
  const failure = probe.lastFailure ? { lastFailure: probe.lastFailure } : {};
  if (probe.state === 'paused') return { reason: `stuck: ${target.waitingOn} is paused`, ...failure };
  if (probe.state === 'scheduled' && probe.attempt === 1) {
    // A free poller takes a scheduled task at once: one still waiting after the limit has none.
    return { reason: `stuck: no worker polls ${target.taskQueue}${pollerNote(probe)}${lostHost(target)}`, ...failure };
  }
  if (probe.attempt > limits.retryAttempts || (probe.attempt > 1 && elapsedMs >= limits.retryMs)) {
    return {
      reason: `stuck: ${target.waitingOn} retrying (attempt ${probe.attempt})${probe.lastFailure ? `: ${probe.lastFailure}` : ''}`,
      ...failure,
    };
  }
  if (probe.state === 'scheduled' && probe.pollers === 0) {
    return { reason: `stuck: no worker polls ${target.taskQueue}${lostHost(target)}`, ...failure };
  }
  return undefined;
}

function pollerNote(probe: PendingActivityProbe): string {
  if (probe.pollers === 0 || probe.lastPollAgoMs === undefined) return '';
  // No time in the words: the reason changes (and is published) only when the verdict does.
  return ` (${probe.pollers} worker${probe.pollers === 1 ? '' : 's'} polled it before: all busy, or gone)`;
}

function lostHost(target: WatchTarget): string {
  return target.host ? ` — hands host ${target.host} lost? (runbook: replaceHandsHost)` : '';
}

/** Sets or clears the stuck state and shows the change (search attribute, current details). */
export function setStuck(op: OperationRun, stuck: StuckState | undefined): void {
  const changed = op.stuck?.reason !== stuck?.reason || op.stuck?.lastFailure !== stuck?.lastFailure;
  op.stuck = stuck;
  if (!changed) return;
  publishSearchAttributes(op, 'state');
  showDetails(op);
}
