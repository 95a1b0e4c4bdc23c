/** `healthCheck`: proves a brain worker runs workflows and a hands worker (if asked) runs activities. */
import { proxyActivities } from '@temporalio/workflow';
import type { HealthActivities, HealthCheckInput, HealthCheckResult } from '../../common/health';
import { HEALTH_ACTIVITY_OPTIONS } from './policies';

export async function healthCheck(input: HealthCheckInput): Promise<HealthCheckResult> {
  const { healthEcho } = proxyActivities<HealthActivities>({
    ...HEALTH_ACTIVITY_OPTIONS,
    taskQueue: input.activityTaskQueue,
  });
  return healthEcho({ message: input.message });
}
