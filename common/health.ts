/**
 * The health check contract: a workflow that runs one echo activity, proving that a brain worker runs
 * workflows and that a worker on the activity's queue (e.g. a hands worker) runs activities.
 */
/** The health check's workflow type. */
export const HEALTH_CHECK_WORKFLOW_TYPE = 'healthCheck';

export interface HealthActivities {
  healthEcho(input: { message: string }): Promise<{ echoed: string; activityHost: string }>;
}

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
