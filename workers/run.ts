/**
 * Starts workers for a role (`brain`, `hands`, `dev`) from the environment and runs them until
 * SIGINT/SIGTERM; used by `agent worker` and the demo.
 */
import type { Worker } from '@temporalio/worker';
import { requireDocker } from '../platform/docker-engine';
import { sandboxImageTag } from '../platform/sandbox-image';
import { readModelSettings } from '../activities/model/settings';
import { ContextCache } from '../activities/brain/context-cache';
import { connectClient, queueSettings, temporalSettings } from '../client/connection';
import { connectWorker } from './connection';
import { installRuntime } from './runtime';
import { createBrainWorker, createHandsHostWorkers } from './workers';
import { handsHostSettings } from './hands-host';
import { readBrainWorkerSettings } from './worker-settings';

export type WorkerRole = 'brain' | 'hands' | 'dev';

export interface StartedWorkers {
  workers: Worker[];
  queues: { brain?: string; hands?: string };
  /** Runs every worker until shutdown; resolves when all have stopped. */
  run(): Promise<void>;
  shutdown(): void;
  close(): Promise<void>;
}

export async function startWorkers(role: WorkerRole, options: { cache?: ContextCache } = {}): Promise<StartedWorkers> {
  installRuntime();
  // Bad settings fail before anything connects.
  const brainSettings = role === 'hands' ? undefined : readBrainWorkerSettings(process.env);
  const temporal = temporalSettings();
  const queues = queueSettings();
  const connection = await connectWorker(temporal);
  const workers: Worker[] = [];
  const closers: Array<() => Promise<void>> = [() => connection.close()];
  if (role === 'brain' || role === 'dev') {
    const modelSettings = readModelSettings();
    if (!modelSettings.ok) throw new Error(`model settings: ${modelSettings.problems.join('; ')}`);
    const { client, connection: clientConnection } = await connectClient(temporal);
    closers.push(() => clientConnection.close());
    workers.push(
      await createBrainWorker({
        connection,
        namespace: temporal.namespace,
        taskQueue: queues.brain,
        client,
        modelSettings: modelSettings.settings,
        cache: options.cache,
        settings: brainSettings,
        // A prebuilt bundle (tests, benchmark) saves bundling at every start.
        workflowBundle: process.env.AGENT_WORKFLOW_BUNDLE ? { codePath: process.env.AGENT_WORKFLOW_BUNDLE } : undefined,
      }),
    );
  }
  if (role === 'hands' || role === 'dev') {
    const docker = await requireDocker();
    const { host, namePrefix } = handsHostSettings();
    workers.push(
      ...(await createHandsHostWorkers({
        connection,
        namespace: temporal.namespace,
        taskQueue: queues.hands,
        docker,
        image: sandboxImageTag(),
        host,
        namePrefix,
      })),
    );
  }
  return {
    workers,
    queues: { brain: role === 'hands' ? undefined : queues.brain, hands: role === 'brain' ? undefined : queues.hands },
    run: async () => {
      await Promise.all(workers.map((worker) => worker.run()));
    },
    shutdown: () => workers.forEach((worker) => worker.getState() === 'RUNNING' && worker.shutdown()),
    close: async () => {
      for (const close of closers.reverse()) await close().catch(() => undefined);
    },
  };
}
