/**
 * `agent doctor [--json]`: what is unhealthy across the namespace, each finding with its reason and
 * the command that fixes it; exit code 1 when there is any finding (0 when all is well).
 *
 * Findings (the runbook in docs/operations.md explains each):
 *  - `search-attributes-missing` — the namespace lacks the project's search attributes;
 *  - `stuck-operation` — an operation says it is stuck (`AgentStatus = "stuck"`), with its reason;
 *  - `queue-without-pollers` — a task queue has pending work and no worker polls it;
 *  - `workflow-task-failing` — a workflow's task keeps failing (unknown workflow type, a
 *    non-determinism error after a deploy, a bug);
 *  - `version-without-pollers` — running workflows are pinned to a build of a Worker Deployment
 *    that no worker polls (its workers were stopped before it drained); the queue's other pollers,
 *    of other builds, never take their tasks;
 *  - `leaked-container` — a sandbox container whose operation is not running, nor its session;
 *  - `sandbox-gone` — an operation whose tool calls keep failing because its sandbox is lost.
 */
import { sessionWorkflowId } from '../common/session';
import type { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { connectClient, type TemporalSettings } from '../client/connection';
import { cliSettings } from './settings';
import { searchAttributeState, SETUP_HINT } from '../client/namespace-setup';
import { HANDS_FAILURE_TYPES } from '../common/hands';
import { statusQuery } from '../common/operation';
import type { SandboxInfo } from '../activities/hands/sandbox-inventory';
import { pinnedVersionOf, runningOnVersionQuery, versionPollers, type DeploymentVersion } from '../client/deployments';
import { versionText } from '../common/deployment-names';

export type FindingKind =
  | 'search-attributes-missing'
  | 'stuck-operation'
  | 'queue-without-pollers'
  | 'workflow-task-failing'
  | 'version-without-pollers'
  | 'leaked-container'
  | 'sandbox-gone';

export interface Finding {
  kind: FindingKind;
  /** What it is about: a workflow id, a task queue, a container name. */
  subject: string;
  reason: string;
  /** The command that fixes it. */
  fix: string;
}

export interface DoctorReport {
  address: string;
  namespace: string;
  healthy: boolean;
  findings: Finding[];
  /** What could not be checked (e.g. Docker not reachable) — not a finding. */
  skipped: string[];
}

export interface DoctorDeps {
  settings?: TemporalSettings;
  /** The local sandboxes (default: the Docker engine's; `undefined` result = Docker unreachable). */
  listSandboxes?: () => Promise<SandboxInfo[] | undefined>;
  /** Most running workflows looked at. */
  limit?: number;
  /** A worker that has not polled for this long is gone (default `POLLER_GONE_AFTER_MS`, 2 min). */
  pollerGoneAfterMs?: number;
}

const TQ = temporal.api.enums.v1.TaskQueueType;
const SANDBOX_FAILURES: string[] = [
  HANDS_FAILURE_TYPES.lost,
  HANDS_FAILURE_TYPES.unavailable,
  HANDS_FAILURE_TYPES.failed,
];

export async function doctorCommand(json: boolean, deps: DoctorDeps = {}): Promise<number> {
  const report = await diagnose(deps);
  if (json) console.log(JSON.stringify(report, null, 2));
  else console.log(formatReport(report));
  return report.healthy ? 0 : 1;
}

export async function diagnose(deps: DoctorDeps = {}): Promise<DoctorReport> {
  const settings = deps.settings ?? cliSettings().temporal;
  const { client, connection } = await connectClient(settings);
  const report: DoctorReport = {
    address: settings.address,
    namespace: settings.namespace,
    healthy: true,
    findings: [],
    skipped: [],
  };
  try {
    const attributes = await attributeFindings(connection, settings.namespace);
    report.findings.push(...attributes);
    if (attributes.length === 0) {
      const running = await runningWorkflows(client, deps.limit ?? 500);
      report.findings.push(...(await workflowFindings(client, running)));
      report.findings.push(...(await versionFindings(client, running, deps)));
      report.findings.push(...(await sandboxFindings(client, deps, report.skipped)));
    }
  } finally {
    await connection.close();
  }
  report.healthy = report.findings.length === 0;
  return report;
}

async function attributeFindings(connection: Connection, namespace: string): Promise<Finding[]> {
  const state = await searchAttributeState(connection, namespace);
  const wrong = [...state.missing, ...state.conflicts];
  if (wrong.length === 0) return [];
  return [
    {
      kind: 'search-attributes-missing',
      subject: namespace,
      reason: `namespace ${namespace} lacks the search attributes ${wrong.join(', ')}: operations cannot run there`,
      fix: `agent setup   # ${SETUP_HINT}`,
    },
  ];
}

type Described = temporal.api.workflowservice.v1.IDescribeWorkflowExecutionResponse;

async function runningWorkflows(client: Client, limit: number): Promise<Array<{ id: string; described: Described }>> {
  const out: Array<{ id: string; described: Described }> = [];
  for await (const wf of client.workflow.list({ query: 'ExecutionStatus = "Running"' })) {
    if (out.length >= limit) break;
    const described = await client.workflowService
      .describeWorkflowExecution({
        namespace: client.options.namespace,
        execution: { workflowId: wf.workflowId, runId: wf.runId },
      })
      .catch(() => undefined);
    if (described) out.push({ id: wf.workflowId, described });
  }
  return out;
}

async function workflowFindings(
  client: Client,
  running: Array<{ id: string; described: Described }>,
): Promise<Finding[]> {
  const findings: Finding[] = [];
  const waiting = new Map<string, { kind: 'workflow' | 'activity'; ids: string[] }>();
  const wait = (queue: string | null | undefined, kind: 'workflow' | 'activity', id: string) => {
    if (!queue) return;
    const entry = waiting.get(`${kind}:${queue}`) ?? { kind, ids: [] };
    entry.ids.push(id);
    waiting.set(`${kind}:${queue}`, entry);
  };
  for (const { id, described } of running) {
    const task = described.pendingWorkflowTask;
    const workflowQueue = described.executionConfig?.taskQueue?.name;
    if (task && (task.attempt ?? 1) > 1) findings.push(await failingTask(client, id, described, task.attempt ?? 1));
    if (task && task.state === temporal.api.enums.v1.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED)
      wait(workflowQueue, 'workflow', id);
    for (const activity of described.pendingActivities ?? []) {
      if (activity.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED)
        wait(activity.activityOptions?.taskQueue?.name, 'activity', id);
      const failureType = activity.lastFailure?.applicationFailureInfo?.type ?? '';
      if ((activity.attempt ?? 1) > 1 && SANDBOX_FAILURES.includes(failureType))
        findings.push({
          kind: 'sandbox-gone',
          subject: id,
          reason: `${activity.activityType?.name ?? 'a hands call'} failed ${(activity.attempt ?? 2) - 1} time(s): ${activity.lastFailure?.message ?? failureType}`,
          fix: `agent sandbox ls   # then fix the Docker host, or: agent abort ${id}`,
        });
    }
    const stuck = await stuckFinding(client, id, described);
    if (stuck) findings.push(stuck);
  }
  for (const [key, { kind, ids }] of waiting) {
    const queue = key.slice(kind.length + 1);
    if ((await pollers(client, queue, kind)) > 0) continue;
    findings.push({
      kind: 'queue-without-pollers',
      subject: queue,
      reason: `${ids.length} workflow(s) wait on ${kind === 'workflow' ? 'workflow' : 'activity'} tasks of ${queue} and no worker polls it (${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', …' : ''})`,
      fix: fixForQueue(queue, kind),
    });
  }
  return findings;
}

/**
 * Running workflows pinned to a build no worker of which polls their queue. Counting the queue's
 * pollers says nothing here: after a rollout they may all be of the new build.
 */
async function versionFindings(
  client: Client,
  running: Array<{ id: string; described: Described }>,
  deps: DoctorDeps,
): Promise<Finding[]> {
  const pinned = new Map<string, { queue: string; version: DeploymentVersion; ids: string[] }>();
  for (const { id, described } of running) {
    const version = pinnedVersionOf(described.workflowExecutionInfo?.versioningInfo);
    const queue = described.executionConfig?.taskQueue?.name;
    if (!version || !queue) continue;
    const key = `${queue}\n${versionText(version)}`;
    const entry = pinned.get(key) ?? { queue, version, ids: [] };
    entry.ids.push(id);
    pinned.set(key, entry);
  }
  const findings: Finding[] = [];
  for (const { queue, version, ids } of pinned.values()) {
    if ((await versionPollers(client, queue, version, deps)) > 0) continue;
    const { deploymentName, buildId } = version;
    findings.push({
      kind: 'version-without-pollers',
      subject: versionText(version),
      reason: `${ids.length} running workflow(s) pinned to build ${buildId} of ${deploymentName} and no worker of that build polls ${queue}: they take no further step until one does (${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', …' : ''})`,
      fix:
        `start its workers again, from the release that built ${buildId} and with the settings they had: AGENT_WORKER_DEPLOYMENT=${deploymentName} AGENT_BRAIN_QUEUE=${queue} agent worker brain   ` +
        `# or, only if another build replays their histories: temporal workflow update-options --query '${runningOnVersionQuery(version, 'Pinned')}' ` +
        `--versioning-override-behavior pinned --versioning-override-deployment-name ${deploymentName} --versioning-override-build-id <that build>`,
    });
  }
  return findings;
}

function fixForQueue(queue: string, kind: 'workflow' | 'activity'): string {
  if (kind === 'workflow') return `AGENT_BRAIN_QUEUE=${queue} agent worker brain`;
  const at = queue.lastIndexOf('@');
  if (at > 0) {
    const [shared, host] = [queue.slice(0, at), queue.slice(at + 1)];
    return `on host ${host}: AGENT_HANDS_QUEUE=${shared} AGENT_HANDS_HOST=${host} agent worker hands   # or, if the host is gone for good: the replaceHandsHost update (docs/operations.md#runbook)`;
  }
  return `AGENT_HANDS_QUEUE=${queue} agent worker hands   # or AGENT_BRAIN_QUEUE=${queue} agent worker brain for brain activities`;
}

async function pollers(client: Client, queue: string, kind: 'workflow' | 'activity'): Promise<number> {
  const described = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: queue },
    taskQueueType: kind === 'workflow' ? TQ.TASK_QUEUE_TYPE_WORKFLOW : TQ.TASK_QUEUE_TYPE_ACTIVITY,
  });
  return described.pollers?.length ?? 0;
}

async function failingTask(client: Client, id: string, described: Described, attempt: number): Promise<Finding> {
  const type = described.workflowExecutionInfo?.type?.name ?? '?';
  let cause = '';
  try {
    const history = await client.workflowService.getWorkflowExecutionHistoryReverse({
      namespace: client.options.namespace,
      execution: { workflowId: id, runId: described.workflowExecutionInfo?.execution?.runId },
      maximumPageSize: 20,
    });
    const failed = history.history?.events?.find((e) => e.workflowTaskFailedEventAttributes);
    cause = failed?.workflowTaskFailedEventAttributes?.failure?.message ?? '';
  } catch {
    // The reason is a bonus; the finding stands without it.
  }
  return {
    kind: 'workflow-task-failing',
    subject: id,
    reason: `workflow task of ${id} (type ${type}) failed ${attempt - 1} time(s)${cause ? `: ${cause.split('\n')[0].slice(0, 300)}` : ''}`,
    fix: `temporal workflow terminate --workflow-id ${id} --reason "workflow task failing"   # after fixing the cause: a wrong --type, or deploy the compatible worker`,
  };
}

async function stuckFinding(client: Client, id: string, described: Described): Promise<Finding | undefined> {
  const payload = described.workflowExecutionInfo?.searchAttributes?.indexedFields?.AgentStatus;
  const status = payload ? defaultPayloadConverter.fromPayload<string>(payload) : undefined;
  if (status !== 'stuck') return undefined;
  const reason = await client.workflow
    .getHandle(id)
    .query(statusQuery)
    .then((st) => st.stuck?.reason)
    .catch(() => undefined);
  return {
    kind: 'stuck-operation',
    subject: id,
    reason: reason ?? 'AgentStatus is "stuck" (its status query did not answer: is a brain worker running?)',
    fix: reason?.includes('no worker polls')
      ? `start a worker on that queue (see the queue-without-pollers finding), or: agent abort ${id}`
      : `agent status ${id}   # then fix the cause, or: agent abort ${id}`,
  };
}

async function sandboxFindings(client: Client, deps: DoctorDeps, skipped: string[]): Promise<Finding[]> {
  const sandboxes = await (deps.listSandboxes ?? localSandboxes)();
  if (!sandboxes) {
    skipped.push('containers: the Docker engine did not answer');
    return [];
  }
  const findings: Finding[] = [];
  for (const sandbox of sandboxes) {
    if (!sandbox.container) continue;
    const owner = sandbox.operationId ?? sandbox.sessionId;
    // A session keeps its container between operations (`keepContainer`, `sandboxIdleMs`): it is
    // leaked only when neither the operation that made it nor its session is running.
    const owners = [owner, sessionWorkflowId(sandbox.sessionId)];
    const running = await Promise.all(
      owners.map((id) =>
        client.workflow
          .getHandle(id)
          .describe()
          .then((d) => d.status.name === 'RUNNING')
          .catch(() => false),
      ),
    );
    if (running.some(Boolean)) continue;
    findings.push({
      kind: 'leaked-container',
      subject: sandbox.container.name,
      reason: `container ${sandbox.container.name} (${sandbox.container.status}) belongs to ${owner}, which is not running (nor is its session)`,
      fix: `agent sandbox rm ${sandbox.sessionId} --keep-volume   # or all old ones: agent sandbox gc`,
    });
  }
  return findings;
}

async function localSandboxes(): Promise<SandboxInfo[] | undefined> {
  const { dockerClient } = await import('../platform/docker-engine');
  const { SandboxInventory } = await import('../activities/hands/sandbox-inventory');
  const { sandboxHostSettings } = await import('./settings');
  const inventory = new SandboxInventory({ docker: dockerClient(), namePrefix: sandboxHostSettings().host.namePrefix });
  return inventory.list().catch(() => undefined);
}

export function formatReport(report: DoctorReport): string {
  const head = `${report.address} · namespace ${report.namespace}: ${report.healthy ? 'healthy' : `${report.findings.length} finding(s)`}`;
  const lines = report.findings.map((f) => `✗ ${f.kind} ${f.subject}\n    ${f.reason}\n    fix: ${f.fix}`);
  const skipped = report.skipped.map((s) => `- not checked: ${s}`);
  return [head, ...lines, ...skipped].join('\n');
}
