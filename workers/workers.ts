/**
 * Worker construction for the three deployments:
 *  - brain: the workflows and the model step (stateless apart from the context cache);
 *  - hands: sandbox tools and the coding tasks' host-side git, on the task queue of the Docker host
 *    that owns the containers;
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
import { createHealthActivities } from '../activities/health';
import { createRepoActivities } from '../activities/repo/activities';
import { DATA_DIR } from '../platform/paths';
import { createAnthropicClient } from '../activities/model/client';
import type { ModelSettings } from '../activities/model/settings';
import { CrashPointActivityInterceptor, crashPointSinks, crashTestMode } from '../activities/crash-points';

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

export function handsActivities(options: Pick<HandsWorkerOptions, 'docker' | 'image' | 'tasksDir'>) {
  const manager = new SandboxManager({ docker: options.docker, image: options.image });
  return {
    ...createHandsActivities({ manager }),
    ...createRepoActivities({ manager, tasksDir: options.tasksDir ?? tasksDir() }),
    ...createHealthActivities(),
  };
}

/** The host folder of coding tasks' clones: `AGENT_TASKS_DIR`, or `tasks` under the data folder. */
export function tasksDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.AGENT_TASKS_DIR || path.join(DATA_DIR, 'tasks');
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
