/**
 * Starts workers for a role (`brain`, `hands`, `dev`) from the environment and runs them until
 * SIGINT/SIGTERM; used by `agent worker` and the demo. Every setting is checked first
 * (`workers/settings.ts`): a wrong one stops the start, before anything connects.
 */
import type { Worker } from '@temporalio/worker';
import { requireDocker } from '../platform/docker-engine';
import { ContextCache } from '../activities/brain/context-cache';
import { connectClient, workflowUrl } from '../client/connection';
import { connectWorker } from './connection';
import { installRuntime } from './runtime';
import { harnessMetricsOfProcess, watchLiveSandboxes } from '../activities/metrics';
import { tracingOfProcess } from '../activities/tracing/spans';
import { namePrefixOf } from '../activities/hands/sandbox-spec';
import { workerSettings, type WorkerRole, type WorkerSettings } from './settings';
import { createBrainWorker, createHandsHostWorkers } from './workers';

export type { WorkerRole } from './settings';

export interface StartedWorkers {
  workers: Worker[];
  queues: { brain?: string; hands?: string };
  /** The hands host these workers serve (roles `hands` and `dev`). */
  host?: string;
  /** The settings they were started with. */
  settings: WorkerSettings;
  /** The brain worker's Worker Deployment version, when it has one (`AGENT_WORKER_DEPLOYMENT`). */
  version?: { deploymentName: string; buildId: string };
  /** Runs every worker until shutdown; resolves when all have stopped. */
  run(): Promise<void>;
  shutdown(): void;
  close(): Promise<void>;
}

export async function startWorkers(role: WorkerRole, options: { cache?: ContextCache } = {}): Promise<StartedWorkers> {
  // Bad settings fail before anything connects, every wrong variable named at once.
  const settings = workerSettings(role);
  installRuntime(settings.logLevel, { metricsAddress: settings.metricsAddress, tracing: settings.tracing });
  const { temporal, queues, brain, hands } = settings;
  const connection = await connectWorker(temporal);
  const workers: Worker[] = [];
  // Closed in reverse: the spans of the last attempts leave before the connection closes.
  const closers: Array<() => Promise<void>> = [() => connection.close()];
  const tracing = tracingOfProcess();
  if (tracing) closers.push(() => tracing.flush());
  if (brain) {
    const { client, connection: clientConnection } = await connectClient(temporal);
    closers.push(() => clientConnection.close());
    workers.push(
      await createBrainWorker({
        connection,
        namespace: temporal.namespace,
        taskQueue: queues.brain,
        client,
        modelSettings: brain.model,
        mcp: brain.mcp,
        secrets: brain.secrets,
        forges: settings.forges,
        workflowsUrl: `${workflowUrl(temporal, '')}`,
        handsTaskQueue: queues.hands,
        cache: options.cache,
        settings: brain.tuning,
        versioning: brain.versioning,
        // A prebuilt bundle (tests, benchmark) saves bundling at every start.
        workflowBundle: brain.workflowBundle ? { codePath: brain.workflowBundle } : undefined,
      }),
    );
  }
  if (hands) {
    const docker = await requireDocker();
    const metrics = harnessMetricsOfProcess();
    if (metrics) {
      const stop = watchLiveSandboxes(docker, namePrefixOf(hands.host.namePrefix), metrics);
      closers.push(() => Promise.resolve(stop()));
    }
    workers.push(
      ...(await createHandsHostWorkers({
        connection,
        namespace: temporal.namespace,
        taskQueue: queues.hands,
        docker,
        image: hands.image,
        host: hands.host.host,
        namePrefix: hands.host.namePrefix,
        settings: hands.sandboxes,
        tasksDir: hands.repo.tasksDir,
        gitAuthor: hands.repo.author,
        hooks: hands.hooks,
        secrets: hands.secrets,
        forges: settings.forges,
        hostEnv: hands.hostEnv,
      })),
    );
  }
  const version = workers[0]?.options.workerDeploymentOptions?.version;
  return {
    workers,
    ...(brain && version ? { version: { deploymentName: version.deploymentName, buildId: version.buildId } } : {}),
    queues: { ...(brain ? { brain: queues.brain } : {}), ...(hands ? { hands: queues.hands } : {}) },
    ...(hands ? { host: hands.host.host } : {}),
    settings,
    run: async () => {
      await Promise.all(workers.map((worker) => worker.run()));
    },
    shutdown: () => workers.forEach((worker) => worker.getState() === 'RUNNING' && worker.shutdown()),
    close: async () => {
      for (const close of closers.reverse()) await close().catch(() => undefined);
    },
  };
}
