/**
 * Failover after a dead worker: a retried activity releases its workflow from the sticky queue.
 *
 * A worker keeps the workflows it ran in its cache and asks the server to send their next workflow
 * task to its own sticky queue. When that worker dies, the server keeps doing so for a while (it
 * treats a sticky queue as alive for 10 s after its last poll, a fixed server constant), and each
 * such task waits out the worker's `stickyQueueScheduleToStartTimeout` before any other worker may
 * take it. The usual way a worker dies mid-operation is in the middle of a model or tool call (that
 * is where the time goes); its call then times out on heartbeats and is retried on another worker.
 * So an attempt after the first resets the workflow's sticky queue (`ResetStickyTaskQueue`) before
 * it reports its outcome: the workflow task that follows goes straight to the normal queue, where
 * any live worker picks it up and rebuilds the workflow from history.
 *
 * When the earlier attempt failed for another reason (a 529, a Docker hiccup) on a live worker,
 * the reset costs that worker one replay of the workflow — cheap next to the retry itself. A reset
 * that fails changes nothing but speed, so it is logged and ignored.
 */
import type { Context } from '@temporalio/activity';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';

export class ReleaseStickyOnRetryInterceptor implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: Context) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    try {
      return await next(input);
    } finally {
      await releaseSticky(this.ctx);
    }
  }
}

async function releaseSticky(ctx: Context): Promise<void> {
  const { attempt, workflowExecution, workflowNamespace, activityType } = ctx.info;
  if (attempt <= 1 || !workflowExecution) return;
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
