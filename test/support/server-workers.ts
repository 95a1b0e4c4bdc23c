/**
 * A brain and a hands worker, with the scripted model, on a Temporal server of the test's own
 * (a bare server, one with a Web UI) — the global test server's workers come from
 * `operation-harness.ts`.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import Docker from 'dockerode';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { createBrainWorker, createHandsWorker } from '../../workers/workers';
import { testPlatform } from './env';
import { testModelSettings } from './operation-harness';

export interface ServerWorkers {
  client: Client;
  model: ScriptedModelServer;
  stop(): Promise<void>;
}

export async function startServerWorkers(
  address: string,
  queues: { brain: string; hands: string },
): Promise<ServerWorkers> {
  const model = await startScriptedModelServer({ script: [] });
  const connection = await Connection.connect({ address });
  const native = await NativeConnection.connect({ address });
  const client = new Client({ connection, namespace: 'default' });
  const common = { connection: native, namespace: 'default' };
  const workers: Worker[] = [
    await createBrainWorker({
      ...common,
      taskQueue: queues.brain,
      client,
      modelSettings: testModelSettings(model.url),
      workflowBundle: { codePath: testPlatform().workflowBundlePath },
    }),
    await createHandsWorker({
      ...common,
      taskQueue: queues.hands,
      docker: new Docker(),
      image: testPlatform().sandboxImage,
    }),
  ];
  const running = workers.map((worker) => worker.run());
  return {
    client,
    model,
    async stop() {
      for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
      await Promise.all(running);
      await model.stop();
      await connection.close();
      await native.close();
    },
  };
}

/** Runs `fn` with workers on the server, stopping them afterwards. */
export async function withServerWorkers(
  address: string,
  queues: { brain: string; hands: string },
  fn: (client: Client, model: ScriptedModelServer) => Promise<void>,
): Promise<void> {
  const workers = await startServerWorkers(address, queues);
  try {
    await fn(workers.client, workers.model);
  } finally {
    await workers.stop();
  }
}
