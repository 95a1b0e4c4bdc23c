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
import Anthropic from '@anthropic-ai/sdk';
import type { Client } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Runtime, Worker, WorkerOptions } from '@temporalio/worker';
import type { Context } from '@temporalio/activity';
import type Docker from 'dockerode';
import { createBrainActivities } from '../activities/brain/activities';
import { ContextCache } from '../activities/brain/context-cache';
import { EgressHost } from '../activities/egress/egress-host';
import * as path from 'node:path';
import { createEnvironmentActivities } from '../activities/environment/activities';
import { DATA_DIR } from '../platform/paths';
import { createHandsActivities } from '../activities/hands/activities';
import { createSandboxes } from '../activities/hands/sandboxes';
import type { HandsSettings } from '../activities/hands/settings';
import { createHealthActivities } from '../activities/health';
import { createHooksActivities } from '../activities/hooks/activities';
import type { HookHostSettings } from '../activities/hooks/settings';
import { createMcpActivities } from '../activities/mcp/activities';
import { createForgeActivities } from '../activities/forge/activities';
import type { Forges } from '../activities/forge/settings';
import type { McpHostSettings } from '../activities/mcp/settings';
import type { SecretStore } from '../activities/secrets/store';
import { createOpsActivities } from '../activities/ops/probe';
import { createRewindActivities } from '../activities/rewind/activities';
import { hostQueueOf } from '../common/hands-route';
import { createRepoActivities } from '../activities/repo/activities';
import { createAnthropicClient } from '../activities/model/client';
import type { ModelSettings } from '../activities/model/settings';
import {
  configureCrashPoints,
  CrashPointActivityInterceptor,
  crashPointSinks,
  crashTestMode,
} from '../activities/crash-points';
import { ensureSandboxTools } from '../platform/sandbox-tools';
import { debianSecurityArchive, sandboxImageDefinition } from '../platform/sandbox-image';
import { ReleaseStickyOnRetryInterceptor } from '../activities/failover';
import { AttemptObserverInterceptor, type AttemptObserver } from '../activities/attempts';
import { harnessMetricsOfProcess, metricsObserver } from '../activities/metrics';
import { traceObserver, traceSinks, tracingOfProcess } from '../activities/tracing/spans';
import type { GitAuthor } from '../activities/repo/settings';
import type { Environment } from '../common/env-settings';
import { DEFAULT_VERSIONING_BEHAVIOUR, VERSIONED_WORKER_GLOBAL } from '../common/versioning';
import type { BrainWorkerSettings, WorkerVersioning } from './worker-settings';
import {
  brainTuningFromEnv,
  crashPointsFromEnv,
  forgesFromEnv,
  handsSettingsFromEnv,
  hookSettingsFromEnv,
  hostEnvironment,
  mcpSettingsFromEnv,
  repoSettingsFromEnv,
  secretStoreFromEnv,
  workerVersioningFromEnv,
} from './settings';
import { workflowInterceptorModules, workflowPreloadModules } from './workflow-bundle';

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
  /** The host-side secret store MCP servers and forges take their tokens from (default: from the environment). */
  secrets?: SecretStore;
  /** The forges pull requests are opened on (default: `AGENT_FORGES`). */
  forges?: Forges;
  /** The Temporal Web UI's page of workflows (`<ui>/namespaces/<ns>/workflows/`), for links the harness writes on forges. */
  workflowsUrl?: string;
  /** The hands queue the tasks a forge starts run on, unless the forge's `tasks` name one (`AGENT_HANDS_QUEUE`). */
  handsTaskQueue?: string;
  /**
   * Sticky failover and workflow-task slots (default: `AGENT_STICKY_FAILOVER`,
   * `AGENT_WORKFLOW_TASK_SLOTS`; see `worker-settings.ts`).
   */
  settings?: BrainWorkerSettings;
  /**
   * The Worker Deployment this worker is a version of, and its build id (default:
   * `AGENT_WORKER_DEPLOYMENT`, `AGENT_WORKER_BUILD_ID`; none: unversioned).
   */
  versioning?: WorkerVersioning;
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
  /** Author and committer of the coding tasks' commits (default `AGENT_GIT_AUTHOR`). */
  gitAuthor?: GitAuthor;
  /** The host-side secret store of egress credentials, forge tokens and output masking (default: from the environment). */
  secrets?: SecretStore;
  /** The forges tasks may clone from and push to (default: `AGENT_FORGES`). */
  forges?: Forges;
  /** The worker's environment, for the programs it runs on the host (default: this process's). */
  hostEnv?: Environment;
  /**
   * Repository hooks allowed and the host hooks defined here (default: `AGENT_REPOSITORY_HOOKS`,
   * `AGENT_HOST_HOOKS`; see `activities/hooks/settings.ts`).
   */
  hooks?: HookHostSettings;
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
 * (`activities/failover.ts`); each attempt is observed for the metrics and the trace spans when the
 * process has them (`activities/attempts.ts`); in crash test mode a boundary after each activity, and
 * a 1 s sticky failover.
 */
export function everyWorkerOptions(options: { defaultModel?: string } = {}): Partial<WorkerOptions> {
  configureCrashPoints(crashPointsFromEnv());
  const crashTests = crashTestMode();
  const metrics = harnessMetricsOfProcess();
  const tracing = tracingOfProcess();
  const observers: AttemptObserver[] = [
    ...(metrics ? [metricsObserver(metrics)] : []),
    ...(tracing ? [traceObserver(tracing)] : []),
  ];
  return {
    shutdownGraceTime: GRACE,
    maxHeartbeatThrottleInterval: HEARTBEAT_FLUSH,
    interceptors: {
      activity: [
        (ctx) => ({ inbound: new ReleaseStickyOnRetryInterceptor(ctx) }),
        ...(observers.length
          ? [(ctx: Context) => ({ inbound: new AttemptObserverInterceptor(ctx, observers, options.defaultModel) })]
          : []),
        ...(crashTests
          ? [(ctx: Context) => ({ inbound: new CrashPointActivityInterceptor(ctx.info.activityType) })]
          : []),
      ],
    },
    ...(crashTests ? { stickyQueueScheduleToStartTimeout: '1 second' } : {}),
  };
}

/**
 * The brain's workflow code, its build id and, with a deployment, its Worker Deployment version. The
 * SDK's default build id (package, version and a 64-digit hash of the bundle, ~90 bytes) is written
 * into five history events per step; a 16-digit hash of the same bundle identifies the code as well
 * for a fifth of the bytes, and changes whenever the workflow code does, which is what a version of
 * a Worker Deployment must do (`AGENT_WORKER_BUILD_ID` replaces it). The hash is of the workflow code
 * alone, so workers that differ only in `AGENT_WORKFLOW_STACK_TRACES` or in being versioned share a
 * build id.
 */
async function workflowCode(
  options: CommonWorkerOptions,
  settings: Pick<BrainWorkerSettings, 'workflowStackTraces'>,
  versioning: WorkerVersioning,
): Promise<Pick<WorkerOptions, 'workflowBundle' | 'buildId' | 'workerDeploymentOptions'>> {
  const bundle =
    options.workflowBundle ??
    (await bundleWorkflowCode({
      workflowsPath: require.resolve('../workflows'),
      workflowInterceptorModules: workflowInterceptorModules(),
      preloadModules: workflowPreloadModules(),
      logger: Runtime.instance().logger,
    }));
  const code = 'code' in bundle ? bundle.code : fs.readFileSync(bundle.codePath, 'utf8');
  const buildId = versioning.buildId ?? bundleBuildId(code);
  // Statements before the bundle's first, run before the SDK freezes the sandbox's globals; on the
  // first line, so the source map's lines still match.
  const prefix = `${settings.workflowStackTraces ? '' : WITHOUT_STACK_TRACES}${versioning.deployment ? VERSIONED_WORKER : ''}`;
  const workflowBundle = prefix ? { code: `${prefix}${code}` } : bundle;
  if (!versioning.deployment) return { workflowBundle, buildId };
  return {
    workflowBundle,
    workerDeploymentOptions: {
      version: { deploymentName: versioning.deployment, buildId },
      useWorkerVersioning: true,
      // Every product type declares its own (workflows/index.ts); this is for the tests' own workflows.
      defaultVersioningBehavior: DEFAULT_VERSIONING_BEHAVIOUR,
    },
  };
}

/** The default build id of a workflow bundle: `agent+<16 hex digits of its SHA-256>`. */
export function bundleBuildId(code: string): string {
  return `agent+${createHash('sha256').update(code).digest('hex').slice(0, 16)}`;
}

/**
 * Turns the SDK's recording of workflow stack traces off (`AGENT_WORKFLOW_STACK_TRACES=off`). The SDK
 * records them from a promise hook that runs for every promise the workflow creates and first looks
 * up the running workflow through `promise.constructor.constructor` (the sandbox's `Function`); on
 * the sandbox's `Promise` that lookup answers "no workflow", so the hook returns at once and records
 * nothing. Errors thrown by workflow code keep their stacks.
 */
export const WITHOUT_STACK_TRACES =
  "Object.defineProperty(Promise, 'constructor', { value: function () { return function () { return undefined; }; } });";

/** Tells the workflow code it runs on a versioned worker, so each type declares its behaviour (`workflows/shared/versioning.ts`). */
const VERSIONED_WORKER = `globalThis.${VERSIONED_WORKER_GLOBAL} = true;`;

export function brainActivities(
  options: Pick<
    BrainWorkerOptions,
    'client' | 'modelSettings' | 'cache' | 'mcp' | 'secrets' | 'forges' | 'workflowsUrl' | 'handsTaskQueue'
  >,
) {
  const anthropic: Anthropic = createAnthropicClient(options.modelSettings);
  const secrets = options.secrets ?? secretStoreFromEnv();
  return {
    ...createBrainActivities({
      anthropic,
      settings: options.modelSettings,
      temporal: options.client,
      cache: options.cache ?? new ContextCache(),
    }),
    // MCP servers run beside the model calls: on the brain's host, never in the sandbox.
    ...createMcpActivities({ settings: options.mcp ?? mcpSettingsFromEnv(), secrets }),
    // Pull requests, reviews, comments and checks: short API calls that need no workspace.
    ...createForgeActivities({
      forges: options.forges ?? forgesFromEnv(),
      secrets,
      ...(options.workflowsUrl ? { workflowsUrl: options.workflowsUrl } : {}),
      ...(options.handsTaskQueue ? { handsTaskQueue: options.handsTaskQueue } : {}),
    }),
    ...createHealthActivities(),
    // A rewind's plan reads the operation's history, as the context rebuild does.
    ...createRewindActivities({ client: options.client }),
  };
}

export function handsActivities(
  options: Pick<
    HandsWorkerOptions,
    | 'docker'
    | 'image'
    | 'namePrefix'
    | 'host'
    | 'taskQueue'
    | 'settings'
    | 'tasksDir'
    | 'gitAuthor'
    | 'secrets'
    | 'forges'
    | 'hostEnv'
    | 'hooks'
  >,
) {
  const settings = options.settings ?? handsSettingsFromEnv();
  const hooks = options.hooks ?? hookSettingsFromEnv();
  const hostEnv = options.hostEnv ?? hostEnvironment();
  const egress = processEgressHost(() => ({ secrets: options.secrets ?? secretStoreFromEnv(), env: hostEnv }));
  egress.warm();
  // The process's egress host is made by its first hands worker: a later one's own store still holds
  // its forge tokens and what its outputs are masked with.
  const secrets = options.secrets ?? egress.secrets;
  const sandboxes = createSandboxes({
    docker: options.docker,
    image: options.image,
    // Built here when missing (a checkout whose platform step has not run since the source changed).
    sandboxTools: ensureSandboxTools((line) => process.stderr.write(`${line}\n`)).path,
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
    hostEnv,
    toolchainCacheDir: path.join(DATA_DIR, 'toolchains'),
    ...definedOr('sandboxImage', sandboxImageDefinition()),
    ...definedOr('debianSecurity', debianSecurityArchive()),
  });
  const repo = repoSettingsFromEnv();
  return {
    ...createHandsActivities({
      sandboxes,
      host,
      allowedRoots: settings.allowedRoots,
      egress,
      secrets,
      repositoryHooks: hooks.repositoryHooks,
    }),
    ...createRepoActivities({
      sandboxes,
      tasksDir: options.tasksDir ?? repo.tasksDir,
      author: options.gitAuthor ?? repo.author,
      allowedRoots: settings.allowedRoots,
      env: hostEnv,
      repositoryHooks: hooks.repositoryHooks,
      forges: options.forges ?? forgesFromEnv(),
      secrets,
    }),
    ...createHooksActivities({
      sandboxes,
      settings: hooks,
      hostRunDir: path.join(DATA_DIR, 'hooks'),
      hostPath: hostEnv.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    }),
    prepareEnvironment,
    setUpWorkspace,
    ...createHealthActivities(),
  };
}

/** `{ [key]: value }`, or nothing when the value is undefined (for optional fields under exactOptionalPropertyTypes). */
function definedOr<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return value === undefined ? {} : ({ [key]: value } as { [P in K]?: V });
}

let egressHost: EgressHost | undefined;

/**
 * The egress proxy of this process (one, shared by its hands workers), made on first use with the
 * host's secret store and environment.
 */
export function processEgressHost(options: () => ConstructorParameters<typeof EgressHost>[0]): EgressHost {
  egressHost ??= new EgressHost(options());
  return egressHost;
}

export async function createBrainWorker(options: BrainWorkerOptions): Promise<Worker> {
  const settings = options.settings ?? brainTuningFromEnv();
  const versioning = options.versioning ?? workerVersioningFromEnv();
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(await workflowCode(options, settings, versioning)),
    activities: { ...brainActivities(options), ...createOpsActivities({ client: options.client }) },
    sinks: { ...crashPointSinks, ...traceSinks(tracingOfProcess()) },
    stickyQueueScheduleToStartTimeout: settings.stickyFailoverMs,
    maxConcurrentWorkflowTaskExecutions: settings.workflowTaskSlots,
    ...everyWorkerOptions({ defaultModel: options.modelSettings.model }),
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
