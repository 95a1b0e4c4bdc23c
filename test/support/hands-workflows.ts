/**
 * Test-only workflows for the hands: run one tool call as an activity so a test can cancel it through
 * Temporal and observe what the activity leaves behind in the sandbox.
 */
import { ActivityCancellationType, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { HandsActivities, RunToolInput, ToolOutcome } from '../../common/hands';

const { runTool } = proxyActivities<HandsActivities>({
  startToCloseTimeout: '2 minutes',
  // Short, so cancellation (delivered on heartbeat) reaches the activity quickly.
  heartbeatTimeout: '2 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { maximumAttempts: 1 },
});

/** Runs one tool call; returns `cancelled` when the workflow is cancelled while it runs. */
export async function handsRunToolOnce(input: RunToolInput): Promise<ToolOutcome | 'cancelled'> {
  try {
    return await runTool(input);
  } catch (err) {
    if (isCancellation(err)) return 'cancelled';
    throw err;
  }
}
