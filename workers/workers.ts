/**
 * Worker construction for the three deployments:
 *  - brain: the workflows and the model step (stateless apart from the context cache);
 *  - hands: sandbox tools, on the task queue of the Docker host that owns the containers;
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
import { createHandsActivities } from '../activities/hands/activities';
import { SandboxManager } from '../activities/hands/sandbox-manager';
import { createHealthActivities } from '../activities/health';
import { createAnthropicClient } from '../activities/model/client';
import type { ModelSettings } from '../activities/model/settings';
import { CrashPointActivityInterceptor, crashPointSinks, crashTestMode } from '../activities/crash-points';
import { ReleaseStickyOnRetryInterceptor } from '../activities/failover';

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
 * (When the worker died in the middle of a call, the retried call releases the workflow from the
 * sticky queue at once: `activities/failover.ts`.)
 */
const STICKY_FAILOVER = '2 seconds';

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
 * hash of the same bundle identifies the code as well for a fifth of the bytes.
 */
async function workflowCode(options: CommonWorkerOptions): Promise<Pick<WorkerOptions, 'workflowBundle' | 'buildId'>> {
  const bundle =
    options.workflowBundle ??
    (await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: Runtime.instance().logger }));
  const code = 'code' in bundle ? bundle.code : fs.readFileSync(bundle.codePath, 'utf8');
  return { workflowBundle: bundle, buildId: `agent+${createHash('sha256').update(code).digest('hex').slice(0, 16)}` };
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

export function handsActivities(options: Pick<HandsWorkerOptions, 'docker' | 'image'>) {
  return {
    ...createHandsActivities({ manager: new SandboxManager({ docker: options.docker, image: options.image }) }),
    ...createHealthActivities(),
  };
}

export async function createBrainWorker(options: BrainWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(await workflowCode(options)),
    activities: brainActivities(options),
    sinks: crashPointSinks,
    stickyQueueScheduleToStartTimeout: STICKY_FAILOVER,
    ...everyWorkerOptions(),
    ...options.tuning,
  });
}

export async function createHandsWorker(options: HandsWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities: handsActivities(options),
    ...everyWorkerOptions(),
    ...options.tuning,
  });
}
