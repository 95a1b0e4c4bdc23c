/**
 * Worker Deployments through the workflow service (the TypeScript client has no helpers for them):
 * what a deployment's versions are and what still runs on each, making a version current or ramping
 * it, deleting a drained one, and whether any worker of a version polls a queue. `agent deploy` and
 * `agent doctor` are built on these; the `temporal worker deployment …` commands do the same
 * (docs/production.md#rolling-out-new-workflow-code).
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { versionText } from '../common/deployment-names';

const STATUS = temporal.api.enums.v1.WorkerDeploymentVersionStatus;
const DRAINAGE = temporal.api.enums.v1.VersionDrainageStatus;
const TQ = temporal.api.enums.v1.TaskQueueType;

export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

export type VersionState = 'current' | 'ramping' | 'draining' | 'drained' | 'inactive' | 'unknown';

export interface VersionStatus {
  buildId: string;
  state: VersionState;
  /** The share of new workflows it gets while ramping (0–100). */
  rampPercent?: number;
  /** Running workflows pinned to it: they need its workers until they end. */
  pinned: number;
  /** Running auto-upgrade workflows whose last workflow task ran on it: they move at their next. */
  autoUpgrade: number;
  /** Up to ten of the pinned ones. */
  pinnedIds: string[];
  /** Its task queues, and how many of its workers poll each (seen within `pollerGoneAfterMs`). */
  queues: Array<{ name: string; pollers: number }>;
  createdAt?: string;
}

export interface DeploymentStatus {
  deployment: string;
  /** False when no worker of it has polled yet (the server knows no such deployment). */
  exists: boolean;
  /** The current version's build id; undefined: new work goes to unversioned workers. */
  current?: string;
  ramping?: { buildId: string; percent: number };
  /** True while the server has not confirmed that the last routing change reached all its task queues. */
  routingPropagating?: boolean;
  /** Newest first. */
  versions: VersionStatus[];
}

/**
 * A poller that has not polled for longer than this is gone. Workers hold each poll up to a minute
 * and keep several open, so a live idle worker polls again well within it; the server lists a gone
 * worker for five minutes (`matching.PollerHistoryTTL`).
 */
export const POLLER_GONE_AFTER_MS = 120_000;

export interface PollerOptions {
  /** Default `POLLER_GONE_AFTER_MS`; tests shorten it. */
  pollerGoneAfterMs?: number;
}

export async function deploymentStatus(
  client: Client,
  deployment: string,
  options: PollerOptions = {},
): Promise<DeploymentStatus> {
  const { namespace } = client.options;
  const described = await client.workflowService
    .describeWorkerDeployment({ namespace, deploymentName: deployment })
    .catch((err: Error & { code?: number }) => {
      if (err.code === 5) return undefined; // NOT_FOUND: no worker of it has polled yet
      throw err;
    });
  const info = described?.workerDeploymentInfo;
  if (!info) return { deployment, exists: false, versions: [] };
  const routing = info.routingConfig;
  const current = routing?.currentDeploymentVersion?.buildId || undefined;
  const rampingId = routing?.rampingDeploymentVersion?.buildId || undefined;
  const percent = routing?.rampingVersionPercentage ?? 0;
  const summaries = [...(info.versionSummaries ?? [])].sort((a, b) => seconds(b.createTime) - seconds(a.createTime));
  const versions: VersionStatus[] = [];
  for (const summary of summaries) {
    const buildId = summary.deploymentVersion?.buildId;
    if (!buildId) continue;
    const version = { deploymentName: deployment, buildId };
    const [pinned, autoUpgrade, pinnedIds, queues] = await Promise.all([
      countRunning(client, version, 'Pinned'),
      countRunning(client, version, 'AutoUpgrade'),
      pinnedWorkflowIds(client, version, 10),
      versionQueues(client, version, options),
    ]);
    versions.push({
      buildId,
      state: stateOf(summary.status, summary.drainageInfo?.status ?? summary.drainageStatus),
      ...(buildId === rampingId ? { rampPercent: percent } : {}),
      pinned,
      autoUpgrade,
      pinnedIds,
      queues,
      ...(summary.createTime ? { createdAt: new Date(seconds(summary.createTime) * 1000).toISOString() } : {}),
    });
  }
  return {
    deployment,
    exists: true,
    ...(current ? { current } : {}),
    ...(rampingId ? { ramping: { buildId: rampingId, percent } } : {}),
    ...(propagating(info.routingConfigUpdateState) ? { routingPropagating: true } : {}),
    versions,
  };
}

function stateOf(
  status: temporal.api.enums.v1.WorkerDeploymentVersionStatus | null | undefined,
  drainage: temporal.api.enums.v1.VersionDrainageStatus | null | undefined,
): VersionState {
  if (status === STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT) return 'current';
  if (status === STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING) return 'ramping';
  if (
    status === STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING ||
    drainage === DRAINAGE.VERSION_DRAINAGE_STATUS_DRAINING
  )
    return 'draining';
  if (
    status === STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED ||
    drainage === DRAINAGE.VERSION_DRAINAGE_STATUS_DRAINED
  )
    return 'drained';
  if (status === STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE) return 'inactive';
  return 'unknown';
}

/** The visibility query of the running workflows of a version with a behaviour (`Pinned`, `AutoUpgrade`). */
export function runningOnVersionQuery(version: DeploymentVersion, behaviour: 'Pinned' | 'AutoUpgrade'): string {
  return `TemporalWorkerDeploymentVersion = "${versionText(version)}" AND TemporalWorkflowVersioningBehavior = "${behaviour}" AND ExecutionStatus = "Running"`;
}

async function countRunning(
  client: Client,
  version: DeploymentVersion,
  behaviour: 'Pinned' | 'AutoUpgrade',
): Promise<number> {
  const counted = await client.workflowService.countWorkflowExecutions({
    namespace: client.options.namespace,
    query: runningOnVersionQuery(version, behaviour),
  });
  return Number(counted.count ?? 0);
}

async function pinnedWorkflowIds(client: Client, version: DeploymentVersion, limit: number): Promise<string[]> {
  const listed = await client.workflowService.listWorkflowExecutions({
    namespace: client.options.namespace,
    query: runningOnVersionQuery(version, 'Pinned'),
    pageSize: limit,
  });
  return (listed.executions ?? []).flatMap((execution) => execution.execution?.workflowId ?? []).slice(0, limit);
}

/** A version's workflow task queues and how many of its workers poll each. */
async function versionQueues(
  client: Client,
  version: DeploymentVersion,
  options: PollerOptions,
): Promise<Array<{ name: string; pollers: number }>> {
  const described = await client.workflowService
    .describeWorkerDeploymentVersion({ namespace: client.options.namespace, deploymentVersion: version })
    .catch(() => undefined);
  const names = new Set(
    (described?.workerDeploymentVersionInfo?.taskQueueInfos ?? [])
      .filter((queue) => queue.type === TQ.TASK_QUEUE_TYPE_WORKFLOW && queue.name)
      .map((queue) => queue.name!),
  );
  return Promise.all(
    [...names].sort().map(async (name) => ({ name, pollers: await versionPollers(client, name, version, options) })),
  );
}

/**
 * How many workers of `version` poll `queue`'s workflow tasks, counting only those seen within
 * `pollerGoneAfterMs`: the queue's other pollers (another build's, unversioned ones) never serve
 * work pinned to this version.
 */
export async function versionPollers(
  client: Client,
  queue: string,
  version: DeploymentVersion,
  options: PollerOptions = {},
): Promise<number> {
  const described = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: queue },
    taskQueueType: TQ.TASK_QUEUE_TYPE_WORKFLOW,
  });
  const since = Date.now() - (options.pollerGoneAfterMs ?? POLLER_GONE_AFTER_MS);
  return (described.pollers ?? []).filter(
    (poller) =>
      poller.deploymentOptions?.deploymentName === version.deploymentName &&
      poller.deploymentOptions?.buildId === version.buildId &&
      seconds(poller.lastAccessTime) * 1000 >= since,
  ).length;
}

/** The version a running workflow is pinned to (by its behaviour or by an override), if any. */
export function pinnedVersionOf(
  info: temporal.api.workflow.v1.IWorkflowExecutionVersioningInfo | null | undefined,
): DeploymentVersion | undefined {
  const override = info?.versioningOverride;
  const overridden = override?.pinned?.version;
  if (overridden?.deploymentName && overridden.buildId)
    return { deploymentName: overridden.deploymentName, buildId: overridden.buildId };
  if (override?.autoUpgrade) return undefined;
  const version = info?.deploymentVersion;
  if (info?.behavior !== temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED) return undefined;
  return version?.deploymentName && version.buildId
    ? { deploymentName: version.deploymentName, buildId: version.buildId }
    : undefined;
}

/** What to do when a request names a version or deployment the server does not know. */
const NO_POLLERS_HINT =
  'start brain workers of that build first (AGENT_WORKER_DEPLOYMENT=<deployment> agent worker brain): a version exists once one of its workers has polled';

/**
 * Makes a version current (`buildId`), or unversioned workers (`null`): new workflows and every
 * auto-upgrade workflow's next task go to it. Resolves once the server has passed the change to
 * every task queue of the deployment, or has not confirmed it within `ROUTING_WAIT_MS` (the change
 * stands either way).
 */
export async function setCurrentVersion(
  client: Client,
  deployment: string,
  buildId: string | null,
  options: { allowNoPollers?: boolean } = {},
): Promise<RoutingChange> {
  await client.workflowService
    .setWorkerDeploymentCurrentVersion({
      namespace: client.options.namespace,
      deploymentName: deployment,
      buildId: buildId ?? '',
      allowNoPollers: options.allowNoPollers === true,
    })
    .catch((err: Error) => {
      throw new Error(
        `cannot make ${buildId ?? 'unversioned workers'} current in ${deployment}: ${err.message}${hintFor(err)}`,
      );
    });
  return routingSettled(client, deployment);
}

/**
 * Ramps a version (`buildId`, 0–100 % of new workflows and of auto-upgrade workflows' next tasks),
 * or ends the ramp (`null`).
 */
export async function setRampingVersion(
  client: Client,
  deployment: string,
  buildId: string | null,
  percent: number,
): Promise<RoutingChange> {
  await client.workflowService
    .setWorkerDeploymentRampingVersion({
      namespace: client.options.namespace,
      deploymentName: deployment,
      buildId: buildId ?? '',
      percentage: buildId === null ? 0 : percent,
    })
    .catch((err: Error) => {
      throw new Error(`cannot ramp ${buildId ?? '(none)'} in ${deployment}: ${err.message}${hintFor(err)}`);
    });
  return routingSettled(client, deployment);
}

/** Deletes a version: the server refuses while it is current, ramping or draining, or while its workers poll. */
export async function deleteVersion(client: Client, deployment: string, buildId: string): Promise<void> {
  await client.workflowService
    .deleteWorkerDeploymentVersion({
      namespace: client.options.namespace,
      deploymentVersion: { deploymentName: deployment, buildId },
    })
    .catch((err: Error) => {
      throw new Error(
        `cannot delete ${buildId} from ${deployment}: ${err.message} (a version can go once it is drained and its workers have stopped for five minutes)`,
      );
    });
}

function hintFor(err: Error): string {
  return /not found|no pollers|does your worker deployment have pollers/i.test(err.message)
    ? ` — ${NO_POLLERS_HINT}`
    : '';
}

/**
 * How long a routing change is waited for. The server applies it at once and takes it to every task
 * queue of the deployment afterwards (usually within a second); its check of that runs as a system
 * activity with a one-minute timeout, retried, so on a loaded server a minute is not always enough.
 */
export const ROUTING_WAIT_MS = 180_000;

/** What a routing change came to: applied, and confirmed on all task queues or still propagating. */
export interface RoutingChange {
  /** False when the server had not confirmed it on all task queues within `ROUTING_WAIT_MS`. */
  settled: boolean;
}

/** Waits until the deployment's routing change has reached all its task queues, for `ROUTING_WAIT_MS` at most. */
async function routingSettled(client: Client, deployment: string): Promise<RoutingChange> {
  const deadline = Date.now() + ROUTING_WAIT_MS;
  for (;;) {
    const described = await client.workflowService.describeWorkerDeployment({
      namespace: client.options.namespace,
      deploymentName: deployment,
    });
    if (!propagating(described.workerDeploymentInfo?.routingConfigUpdateState)) return { settled: true };
    if (Date.now() > deadline) return { settled: false };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function propagating(state: temporal.api.enums.v1.RoutingConfigUpdateState | null | undefined): boolean {
  return state === temporal.api.enums.v1.RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS;
}

function seconds(ts: { seconds?: unknown } | null | undefined): number {
  return ts?.seconds ? Number(ts.seconds) : 0;
}
