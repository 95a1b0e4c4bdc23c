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
  const pending = (described.pendingActivities ?? []).find((a) => a.activityId === input.activityId);
  if (!pending) return { state: 'absent', attempt: 0, pollers };
  const lastFailure = pending.lastFailure?.message ?? undefined;
  return {
    state: stateName(pending.state, pending.pauseInfo != null),
    attempt: pending.attempt ?? 1,
    ...(lastFailure ? { lastFailure } : {}),
    pollers,
  };
}

function stateName(state: temporal.api.enums.v1.PendingActivityState | null | undefined, paused: boolean) {
  if (paused || state === STATE.PENDING_ACTIVITY_STATE_PAUSED || state === STATE.PENDING_ACTIVITY_STATE_PAUSE_REQUESTED)
    return 'paused' as const;
  if (state === STATE.PENDING_ACTIVITY_STATE_STARTED) return 'started' as const;
  if (state === STATE.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED) return 'cancel-requested' as const;
  return 'scheduled' as const;
}
