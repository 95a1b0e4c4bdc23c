/**
 * Test-only workflow for failover: one activity call whose first attempt fails (as a call on a
 * worker that died would), so a test can see where the workflow task after its retry goes.
 */
import { proxyActivities } from '@temporalio/workflow';

export interface FailOnceActivities {
  /** Fails its first attempt with a retryable error, then returns the attempt number. */
  failOnce(): Promise<number>;
}

const { failOnce } = proxyActivities<FailOnceActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '100 milliseconds', maximumAttempts: 3 },
});

/** Calls `failOnce` and returns the attempt that succeeded. */
export async function retriedActivityOnce(): Promise<number> {
  return failOnce();
}
