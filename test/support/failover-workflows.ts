/**
 * Test-only workflows for failover: one activity call whose first attempt fails — by timing out (as
 * a call on a worker that died does) or with an error (its worker alive) — so a test can see where
 * the workflow task after its retry goes.
 */
import { proxyActivities } from '@temporalio/workflow';

export interface FailOnceActivities {
  /** Fails its first attempt with a retryable error, then returns the attempt number. */
  failOnce(): Promise<number>;
  /** Never ends its first attempt (the server times it out), then returns the attempt number. */
  hangOnce(): Promise<number>;
}

const { failOnce, hangOnce } = proxyActivities<FailOnceActivities>({
  startToCloseTimeout: '2 seconds',
  retry: { initialInterval: '100 milliseconds', maximumAttempts: 3 },
});

/** Calls `failOnce` and returns the attempt that succeeded. */
export async function retriedActivityOnce(): Promise<number> {
  return failOnce();
}

/** Calls `hangOnce` and returns the attempt that succeeded. */
export async function timedOutActivityOnce(): Promise<number> {
  return hangOnce();
}
