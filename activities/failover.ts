/**
 * Failover after a dead worker: an attempt retried after its predecessor timed out releases its
 * workflow from the sticky queue.
 *
 * A worker keeps the workflows it ran in its cache and asks the server to send their next workflow
 * task to its own sticky queue. When that worker dies, the server keeps doing so for a while (it
 * treats a sticky queue as alive for 10 s after its last poll, a fixed server constant), and each
 * such task waits out the worker's `stickyQueueScheduleToStartTimeout` before any other worker may
 * take it. The usual way a worker dies mid-operation is in the middle of a model or tool call (that
 * is where the time goes); its call then times out on heartbeats and is retried on another worker.
 * So an attempt whose predecessor timed out resets the workflow's sticky queue
 * (`ResetStickyTaskQueue`) before it reports its outcome: the workflow task that follows goes
 * straight to the normal queue, where any live worker picks it up and rebuilds the workflow from
 * history.
 *
 * An attempt whose predecessor failed with an error (a 529, a Docker hiccup) leaves the sticky queue
 * alone: that worker was alive to report it. A reset is not free beyond the replay it costs: until
 * the workflow's next task completes, queries reach the worker that still caches it through the
 * normal queue, carrying events the cached run has not seen yet, and the worker applies them while
 * answering (so workflow code must not decide from the clock: `workflows/shared/stuck-watchdog.ts`).
 * A reset or a look that fails changes nothing but speed, so it is logged and ignored.
 */
import type { Context } from '@temporalio/activity';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';

export class ReleaseStickyOnRetryInterceptor implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: Context) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const release = this.ctx.info.attempt > 1 ? previousAttemptTimedOut(this.ctx) : Promise.resolve(false);
    try {
      return await next(input);
    } finally {
      if (await release) await releaseSticky(this.ctx);
    }
  }
}

/**
 * Whether the attempt before this one ended by a timeout (its worker may be dead), from the server's
 * record of this pending activity; true when that record cannot be read (a reset is the safe side).
 */
async function previousAttemptTimedOut(ctx: Context): Promise<boolean> {
  const { workflowExecution, workflowNamespace, activityId, activityType, attempt } = ctx.info;
  if (!workflowExecution) return false;
  try {
    const described = await ctx.client.workflowService.describeWorkflowExecution({
      namespace: workflowNamespace,
      execution: { workflowId: workflowExecution.workflowId, runId: workflowExecution.runId },
    });
    const pending = (described.pendingActivities ?? []).find((activity) => activity.activityId === activityId);
    const failure = pending?.lastFailure;
    if (!failure) return true;
    return failure.timeoutFailureInfo != null || failure.cause?.timeoutFailureInfo != null;
  } catch (err) {
    ctx.log.warn(`${activityType} attempt ${attempt}: could not read how the attempt before ended`, {
      error: err instanceof Error ? err.message : String(err),
    });
    return true;
  }
}

async function releaseSticky(ctx: Context): Promise<void> {
  const { attempt, workflowExecution, workflowNamespace, activityType } = ctx.info;
  if (!workflowExecution) return;
  try {
    await ctx.client.workflowService.resetStickyTaskQueue({
      namespace: workflowNamespace,
      execution: { workflowId: workflowExecution.workflowId, runId: workflowExecution.runId },
    });
  } catch (err) {
    ctx.log.warn(`${activityType} attempt ${attempt}: could not reset the workflow's sticky queue`, {
      error: err instanceof Error ? err.message : String(err),
    });
  }
}
