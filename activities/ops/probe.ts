/**
 * `probePendingActivity`: what the Temporal server knows about one pending activity of the calling
 * workflow (state, attempt, last failure) and whether any worker polls its task queue. The
 * operation's stuck detection runs it when an activity has not finished within its limit.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { OpsActivities, PendingActivityProbe, PendingActivityProbeInput } from '../../common/stuck';

const STATE = temporal.api.enums.v1.PendingActivityState;

export function createOpsActivities(deps: { client: Client }): OpsActivities {
  return {
    probePendingActivity: (input) => probePendingActivity(deps.client, input),
  };
}

export async function probePendingActivity(
  client: Client,
  input: PendingActivityProbeInput,
): Promise<PendingActivityProbe> {
  const { namespace } = client.options;
  const [described, queue] = await Promise.all([
    client.workflowService.describeWorkflowExecution({
      namespace,
      execution: { workflowId: input.workflowId, runId: input.runId },
    }),
    client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: input.taskQueue },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    }),
  ]);
  const pollers = (queue.pollers ?? []).length;
  const lastPoll = Math.max(0, ...(queue.pollers ?? []).map((p) => timestampMs(p.lastAccessTime)));
  const lastPollAgo = lastPoll > 0 ? { lastPollAgoMs: Math.max(0, Date.now() - lastPoll) } : {};
  const elapsed = input.sinceMs === undefined ? {} : { elapsedMs: Math.max(0, Date.now() - input.sinceMs) };
  const pending = (described.pendingActivities ?? []).find((a) => a.activityId === input.activityId);
  if (!pending) return { state: 'absent', attempt: 0, pollers, ...lastPollAgo, ...elapsed };
  const lastFailure = pending.lastFailure?.message ?? undefined;
  const state = stateName(pending.state, pending.pauseInfo != null);
  const attempt = pending.attempt ?? 1;
  const scheduled = timestampMs(pending.scheduledTime);
  const retryDue =
    state === 'scheduled' && attempt > 1 && scheduled > 0 ? { scheduledAgoMs: Date.now() - scheduled } : {};
  return {
    state,
    attempt,
    ...(lastFailure ? { lastFailure } : {}),
    ...retryDue,
    pollers,
    ...lastPollAgo,
    ...elapsed,
  };
}

/** A protobuf Timestamp (seconds as a number or a Long) in milliseconds since the epoch. */
function timestampMs(ts: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  if (!ts?.seconds) return 0;
  return Number(ts.seconds) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);
}

function stateName(state: temporal.api.enums.v1.PendingActivityState | null | undefined, paused: boolean) {
  if (paused || state === STATE.PENDING_ACTIVITY_STATE_PAUSED || state === STATE.PENDING_ACTIVITY_STATE_PAUSE_REQUESTED)
    return 'paused' as const;
  if (state === STATE.PENDING_ACTIVITY_STATE_STARTED) return 'started' as const;
  if (state === STATE.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED) return 'cancel-requested' as const;
  return 'scheduled' as const;
}
