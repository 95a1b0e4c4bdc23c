/**
 * A hands activity that starts after the server gave up on its attempt (its worker was far behind,
 * or paused) must not create a sandbox: the operation may have ended and removed its container
 * already, and nobody would remove a new one. Its work is not at stake — the server takes no answer
 * from a stale attempt, and a `never` call's journal keeps it from running twice — only the container
 * it would leave behind.
 *
 * So before a container is created (never for a call whose container runs: one probe per creation,
 * not per call), the activity asks the server whether its attempt is still the one running. A stale
 * attempt is refused when the answer says so: the workflow closed, or the activity is no longer
 * pending at this attempt (a later attempt is scheduled or running, or the activity ended). Anything
 * else — outside an activity, no client, a server that does not answer in time, a workflow it does
 * not know — lets the creation go ahead as before: the probe only ever prevents a leak.
 */
import { Context } from '@temporalio/activity';
import { SandboxError } from './docker-calls';

/** How long the probe may take before the creation goes ahead without its answer. */
export const STALE_ATTEMPT_PROBE_MS = 5_000;

/** Throws `SandboxError('lost')` when the running activity's attempt is known to be stale; else returns. */
export async function refuseStaleAttempt(): Promise<void> {
  const ctx = activityContext();
  if (!ctx) return;
  const stale = await staleReason(ctx);
  if (!stale) return;
  const { activityType, activityId, attempt, workflowExecution } = ctx.info;
  const message =
    `attempt ${attempt} of ${activityType} ${activityId} (workflow ${workflowExecution?.workflowId}) started after ` +
    `the server gave up on it: ${stale}; no sandbox is created for it`;
  ctx.log.warn(message);
  throw new SandboxError('lost', message);
}

/** Why the attempt is stale, or undefined when it is current or nobody can tell. */
async function staleReason(ctx: Context): Promise<string | undefined> {
  const { workflowExecution, activityId, attempt, isLocal } = ctx.info;
  if (isLocal || !workflowExecution) return undefined;
  let client: Context['client'];
  try {
    client = ctx.client;
  } catch {
    return undefined; // an activity run without a client (a test's mock environment)
  }
  let timer: NodeJS.Timeout | undefined;
  const description = await Promise.race([
    client.workflow
      .getHandle(workflowExecution.workflowId, workflowExecution.runId)
      .describe()
      .catch(() => undefined),
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), STALE_ATTEMPT_PROBE_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  if (!description) return undefined;
  if (description.status.name !== 'RUNNING') return `the workflow is ${description.status.name.toLowerCase()}`;
  const pending = (description.raw.pendingActivities ?? []).find((activity) => activity.activityId === activityId);
  if (!pending) return 'the activity is no longer pending';
  if ((pending.attempt ?? 0) !== attempt) return `attempt ${pending.attempt} is the current one`;
  return undefined;
}

function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined; // not in an activity (a test calling the lifecycle directly)
  }
}
