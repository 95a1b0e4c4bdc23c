/**
 * Worker construction for the three deployments:
 *  - brain: the workflows and the model step (stateless apart from the context cache);
 *  - hands: sandbox tools and the coding tasks' host-side git, on the task queue of the Docker host
 *    that owns the containers;
 *  - dev: both in one process.
 * Shutdown is graceful: a running model call or tool call gets `shutdownGraceTime` to finish.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import type { Client } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Runtime, Worker, WorkerOptions } from '@temporalio/worker';
import type { Context } from '@temporalio/activity';
import type Docker from 'dockerode';
import { createBrainActivities } from '../activities/brain/activities';
import { ContextCache } from '../activities/brain/context-cache';
import { EgressHost } from '../activities/egress/egress-host';
import { createEnvironmentActivities } from '../activities/environment/activities';
import { createHandsActivities } from '../activities/hands/activities';
import { createSandboxes } from '../activities/hands/sandboxes';
import { readHandsSettings, type HandsSettings } from '../activities/hands/settings';
import { createHealthActivities } from '../activities/health';
import { createMcpActivities } from '../activities/mcp/activities';
import { readMcpSettings, type McpHostSettings } from '../activities/mcp/settings';
import { loadSecretStore, type SecretStore } from '../activities/secrets/store';
import { createOpsActivities } from '../activities/ops/probe';
import { hostQueueOf } from '../common/hands-route';
import { createRepoActivities } from '../activities/repo/activities';
import { createAnthropicClient } from '../activities/model/client';
import type { ModelSettings } from '../activities/model/settings';
import { CrashPointActivityInterceptor, crashPointSinks, crashTestMode } from '../activities/crash-points';
import { DATA_DIR } from '../platform/paths';
import { ReleaseStickyOnRetryInterceptor } from '../activities/failover';
import { readBrainWorkerSettings, type BrainWorkerSettings } from './worker-settings';

export interface CommonWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** A prebuilt workflow bundle (tests, benchmark); otherwise `workflows/index.ts` is bundled at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Extra worker options (concurrency, tuning). */
  tuning?: Partial<WorkerOptions>;
}

export interface BrainWorkerOptions extends CommonWorkerOptions {
  client: Client;
  modelSettings: ModelSettings;
  cache?: ContextCache;
  /** MCP: the commands a stdio server may run (default: `AGENT_MCP_COMMANDS`, `activities/mcp/settings.ts`). */
  mcp?: McpHostSettings;
  /** The host-side secret store MCP servers take their tokens from (default: `loadSecretStore()`). */
  secrets?: SecretStore;
  /**
   * Sticky failover and workflow-task slots (default: `AGENT_STICKY_FAILOVER`,
   * `AGENT_WORKFLOW_TASK_SLOTS`; see `worker-settings.ts`).
   */
  settings?: BrainWorkerSettings;
}

export interface HandsWorkerOptions extends CommonWorkerOptions {
  docker: Docker;
  image: string;
  /** What this host's container and volume names start with (default `agent-`). */
  namePrefix?: string;
  /**
   * This hands host's name. With it, the worker set polls the shared queue (`taskQueue`) for the
   * first call of a session and its own queue (`hostQueueOf(taskQueue, host)`) for the rest
   * (`createHandsHostWorkers`); without it, one worker serves everything on the shared queue.
   */
  host?: string;
  /**
   * The seed roots, workspace quota and sandbox limits; default: from the environment
   * (`AGENT_ALLOWED_ROOTS`, `AGENT_WORKSPACE_QUOTA`, `AGENT_SANDBOX_PIDS`, …; see
   * `activities/hands/settings.ts`).
   */
  settings?: HandsSettings;
  /** Where coding tasks keep their host-side clones (default `AGENT_TASKS_DIR` or `.data/tasks`). */
  tasksDir?: string;
}

const GRACE = '2 minutes';
/**
 * Heartbeats reach the server at least this often. Cancellation (an abort) reaches a running
 * activity only with a heartbeat's response, so this bounds how long an abort takes to stop a tool.
 */
const HEARTBEAT_FLUSH = '1 second';
/**
 * What every worker shares: a graceful shutdown, the heartbeat flush, and the activity interceptors
 * — a retried attempt releases its workflow from a dead worker's sticky queue
 * (`activities/failover.ts`); in crash test mode a boundary after each activity, and a 1 s sticky
 * failover.
 */
export function everyWorkerOptions(): Partial<WorkerOptions> {
  return {
    shutdownGraceTime: GRACE,
    maxHeartbeatThrottleInterval: HEARTBEAT_FLUSH,
    interceptors: {
      activity: [
        (ctx) => ({ inbound: new ReleaseStickyOnRetryInterceptor(ctx) }),
        ...(crashTestMode
          ? [(ctx: Context) => ({ inbound: new CrashPointActivityInterceptor(ctx.info.activityType) })]
          : []),
      ],
    },
    ...(crashTestMode ? { stickyQueueScheduleToStartTimeout: '1 second' } : {}),
  };
}

/**
 * The brain's workflow code and its build id. The SDK's default build id (package, version and a
 * 64-digit hash of the bundle, ~90 bytes) is written into five history events per step; a 16-digit
 * hash of the same bundle identifies the code as well for a fifth of the bytes. The hash is of the
 * workflow code alone, so workers that differ only in `AGENT_WORKFLOW_STACK_TRACES` share a build id.
 */
async function workflowCode(
  options: CommonWorkerOptions,
  settings: Pick<BrainWorkerSettings, 'workflowStackTraces'>,
): Promise<Pick<WorkerOptions, 'workflowBundle' | 'buildId'>> {
  const bundle =
    options.workflowBundle ??
    (await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: Runtime.instance().logger }));
  const code = 'code' in bundle ? bundle.code : fs.readFileSync(bundle.codePath, 'utf8');
  const buildId = `agent+${createHash('sha256').update(code).digest('hex').slice(0, 16)}`;
  if (settings.workflowStackTraces) return { workflowBundle: bundle, buildId };
  // The bundle's first statement, before the SDK freezes the sandbox's globals; on the first line, so
  // the source map's lines still match.
  return { workflowBundle: { code: `${WITHOUT_STACK_TRACES}${code}` }, buildId };
}

/** Makes every stack trace taken inside the workflow sandbox empty (`AGENT_WORKFLOW_STACK_TRACES=off`). */
export const WITHOUT_STACK_TRACES = 'Error.stackTraceLimit = 0;';

export function brainActivities(
  options: Pick<BrainWorkerOptions, 'client' | 'modelSettings' | 'cache' | 'mcp' | 'secrets'>,
) {
  const anthropic: Anthropic = createAnthropicClient(options.modelSettings);
  return {
    ...createBrainActivities({
      anthropic,
      settings: options.modelSettings,
      temporal: options.client,
      cache: options.cache ?? new ContextCache(),
    }),
    // MCP servers run beside the model calls: on the brain's host, never in the sandbox.
    ...createMcpActivities({
      settings: options.mcp ?? readMcpSettings(),
      secrets: options.secrets ?? loadSecretStore(),
    }),
    ...createHealthActivities(),
  };
}

/** The hands settings of this process's environment (workspace images under the data directory). */
export function handsSettingsFromEnv(): HandsSettings {
  return readHandsSettings(process.env, { imageDir: path.join(DATA_DIR, 'workspaces') });
}

export function handsActivities(
  options: Pick<HandsWorkerOptions, 'docker' | 'image' | 'namePrefix' | 'host' | 'taskQueue' | 'settings' | 'tasksDir'>,
) {
  const settings = options.settings ?? handsSettingsFromEnv();
  const egress = processEgressHost();
  egress.warm();
  const sandboxes = createSandboxes({
    docker: options.docker,
    image: options.image,
    namePrefix: options.namePrefix,
    quota: settings.quota,
    limits: settings.limits,
    egress,
    executor: settings.executor,
  });
  const host = options.host ? { host: options.host, taskQueue: hostQueueOf(options.taskQueue, options.host) } : {};
  const { prepareEnvironment, setUpWorkspace } = createEnvironmentActivities({
    docker: options.docker,
    sandboxes,
    egress,
    allowedRoots: settings.allowedRoots,
    hostEnv: process.env,
    toolchainCacheDir: path.join(DATA_DIR, 'toolchains'),
  });
  return {
    ...createHandsActivities({ sandboxes, host, allowedRoots: settings.allowedRoots, egress, secrets: egress.secrets }),
    ...createRepoActivities({ sandboxes, tasksDir: options.tasksDir ?? tasksDir() }),
    prepareEnvironment,
    setUpWorkspace,
    ...createHealthActivities(),
  };
}

let egressHost: EgressHost | undefined;

/**
 * The egress proxy of this process (one, shared by its hands workers) with the host's secret store
 * (`AGENT_SECRETS_FILE`, `AGENT_SECRET_<NAME>`; see `activities/secrets/store.ts`).
 */
export function processEgressHost(): EgressHost {
  egressHost ??= new EgressHost({ secrets: loadSecretStore() });
  return egressHost;
}

/** The host folder of coding tasks' clones: `AGENT_TASKS_DIR`, or `tasks` under the data folder. */
export function tasksDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.AGENT_TASKS_DIR || path.join(DATA_DIR, 'tasks');
}

export async function createBrainWorker(options: BrainWorkerOptions): Promise<Worker> {
  const settings = options.settings ?? readBrainWorkerSettings(process.env);
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(await workflowCode(options, settings)),
    activities: { ...brainActivities(options), ...createOpsActivities({ client: options.client }) },
    sinks: crashPointSinks,
    stickyQueueScheduleToStartTimeout: settings.stickyFailoverMs,
    maxConcurrentWorkflowTaskExecutions: settings.workflowTaskSlots,
    ...everyWorkerOptions(),
    ...options.tuning,
  });
}

export async function createHandsWorker(options: HandsWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    // One worker alone serves every call on its queue: it has no host queue to hand out.
    activities: handsActivities({ ...options, host: undefined }),
    ...everyWorkerOptions(),
    ...options.tuning,
  });
}

/**
 * The workers of one hands host: one on the shared hands queue (where a session's first call claims
 * its host) and one on the host's own queue (every later call of the sessions it holds). Both run
 * the same activities on the same Docker engine.
 */
export async function createHandsHostWorkers(options: HandsWorkerOptions & { host: string }): Promise<Worker[]> {
  const activities = handsActivities(options);
  const worker = (taskQueue: string) =>
    Worker.create({
      connection: options.connection,
      namespace: options.namespace,
      taskQueue,
      activities,
      ...everyWorkerOptions(),
      ...options.tuning,
    });
  return [await worker(options.taskQueue), await worker(hostQueueOf(options.taskQueue, options.host))];
}
