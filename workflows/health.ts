/**
 * `healthCheck`: proves a brain worker runs workflows and a hands worker (if asked) runs activities.
 * Used by `agent doctor` and the platform smoke test.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { HealthActivities } from '../activities/health';

export interface HealthCheckInput {
  /** Text echoed back by the activity. */
  message: string;
  /** Task queue of the activity (defaults to the workflow's own queue). */
  activityTaskQueue?: string;
}

export interface HealthCheckResult {
  echoed: string;
  activityHost: string;
}

export async function healthCheck(input: HealthCheckInput): Promise<HealthCheckResult> {
  const { healthEcho } = proxyActivities<HealthActivities>({
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 3 },
    taskQueue: input.activityTaskQueue,
    summary: 'health echo',
  });
  return healthEcho({ message: input.message });
}
