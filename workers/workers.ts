/**
 * Worker construction for the three deployments:
 *  - brain: the workflows and the model step (stateless apart from the context cache);
 *  - hands: sandbox tools, on the task queue of the Docker host that owns the containers;
 *  - dev: both in one process.
 * Shutdown is graceful: a running model call or tool call gets `shutdownGraceTime` to finish.
 */
import * as path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker, WorkerOptions } from '@temporalio/worker';
import type Docker from 'dockerode';
import { createBrainActivities } from '../activities/brain/activities';
import { ContextCache } from '../activities/brain/context-cache';
import { createHandsActivities } from '../activities/hands/activities';
import { SandboxManager } from '../activities/hands/sandbox-manager';
import { readHandsSettings, type HandsSettings } from '../activities/hands/settings';
import { createHealthActivities } from '../activities/health';
import { createAnthropicClient } from '../activities/model/client';
import type { ModelSettings } from '../activities/model/settings';
import { CrashPointActivityInterceptor, crashPointSinks, crashTestMode } from '../activities/crash-points';
import { DATA_DIR } from '../platform/paths';

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
}

export interface HandsWorkerOptions extends CommonWorkerOptions {
  docker: Docker;
  image: string;
  /**
   * The seed roots, workspace quota and sandbox limits; default: from the environment
   * (`AGENT_ALLOWED_ROOTS`, `AGENT_WORKSPACE_QUOTA`, `AGENT_SANDBOX_PIDS`, …; see
   * `activities/hands/settings.ts`).
   */
  settings?: HandsSettings;
}

const GRACE = '2 minutes';
/**
 * Heartbeats reach the server at least this often. Cancellation (an abort) reaches a running
 * activity only with a heartbeat's response, so this bounds how long an abort takes to stop a tool.
 */
const HEARTBEAT_FLUSH = '1 second';
/**
 * How long a workflow task waits for the worker that ran the workflow's previous task before any
 * worker may take it (SDK default 10 s). A healthy worker polls its sticky queue constantly, so a
 * short wait only matters when that worker died: the operation moves on after 2 s instead of 10.
 */
const STICKY_FAILOVER = '2 seconds';

/** Worker options of the crash test mode: a boundary after each activity, fast sticky-queue failover. */
function crashTestOptions(): Partial<WorkerOptions> {
  if (!crashTestMode) return {};
  return {
    interceptors: { activity: [(ctx) => ({ inbound: new CrashPointActivityInterceptor(ctx.info.activityType) })] },
    stickyQueueScheduleToStartTimeout: '1 second',
  };
}

function workflowSource(options: CommonWorkerOptions): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  return options.workflowBundle
    ? { workflowBundle: options.workflowBundle }
    : { workflowsPath: require.resolve('../workflows') };
}

export function brainActivities(options: Pick<BrainWorkerOptions, 'client' | 'modelSettings' | 'cache'>) {
  const anthropic: Anthropic = createAnthropicClient(options.modelSettings);
  return {
    ...createBrainActivities({
      anthropic,
      settings: options.modelSettings,
      temporal: options.client,
      cache: options.cache ?? new ContextCache(),
    }),
    ...createHealthActivities(),
  };
}

/** The hands settings of this process's environment (workspace images under the data directory). */
export function handsSettingsFromEnv(): HandsSettings {
  return readHandsSettings(process.env, { imageDir: path.join(DATA_DIR, 'workspaces') });
}

export function handsActivities(options: Pick<HandsWorkerOptions, 'docker' | 'image' | 'settings'>) {
  const settings = options.settings ?? handsSettingsFromEnv();
  const manager = new SandboxManager({
    docker: options.docker,
    image: options.image,
    quota: settings.quota,
    limits: settings.limits,
  });
  return {
    ...createHandsActivities({ manager, allowedRoots: settings.allowedRoots }),
    ...createHealthActivities(),
  };
}

export async function createBrainWorker(options: BrainWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...workflowSource(options),
    activities: brainActivities(options),
    sinks: crashPointSinks,
    stickyQueueScheduleToStartTimeout: STICKY_FAILOVER,
    shutdownGraceTime: GRACE,
    maxHeartbeatThrottleInterval: HEARTBEAT_FLUSH,
    ...crashTestOptions(),
    ...options.tuning,
  });
}

export async function createHandsWorker(options: HandsWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities: handsActivities(options),
    shutdownGraceTime: GRACE,
    maxHeartbeatThrottleInterval: HEARTBEAT_FLUSH,
    ...crashTestOptions(),
    ...options.tuning,
  });
}
