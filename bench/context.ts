/**
 * What every scenario runs against: a Temporal client on the bench's server, the prebuilt workflow
 * bundle, the Docker engine and the sandbox image — and the durable harness itself, started in this
 * process on fresh task queues (brain + hands workers from `workers/workers.ts`, as deployed).
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type Docker from 'dockerode';
import { ContextCache } from '../activities/brain/context-cache';
import { OPERATION_WORKFLOW_TYPE, type OperationInput } from '../common/operation';
import { installRuntime } from '../workers/runtime';
import { createBrainWorker, createHandsWorker } from '../workers/workers';
import { benchModelSettings } from './model';
import { createSandboxes } from '../activities/hands/sandboxes';
import { ensureSandboxTools } from '../platform/sandbox-tools';

/** Loop detection's limits for the bench: its scenarios repeat calls on purpose. */
export const BENCH_LOOP_LIMITS = { sameCallRepeats: 1_000_000, alternations: 1_000_000, errorTurns: 1_000_000 };

export interface BenchPlatform {
  address: string;
  namespace: string;
  /** A workflow bundle built once (`bundleWorkflowCode` of `workflows/index.ts`). */
  workflowBundlePath: string;
  docker: Docker;
  image: string;
}

export interface BenchContext extends BenchPlatform {
  client: Client;
  nativeConnection: NativeConnection;
  log(line: string): void;
  /** Removes the containers and volumes of the given sandbox ids (missing ones are fine). */
  removeSandboxes(ids: Iterable<string>): Promise<void>;
  close(): Promise<void>;
}

export async function connectBench(platform: BenchPlatform, log: (line: string) => void): Promise<BenchContext> {
  installRuntime();
  const connection = await Connection.connect({ address: platform.address });
  const nativeConnection = await NativeConnection.connect({ address: platform.address });
  return {
    ...platform,
    client: new Client({ connection, namespace: platform.namespace }),
    nativeConnection,
    log,
    async removeSandboxes(ids) {
      // Through the sandbox lifecycle: a quota workspace's loop device and image go with its volume.
      const { lifecycle } = createSandboxes({
        docker: platform.docker,
        image: platform.image,
        sandboxTools: ensureSandboxTools().path,
      });
      for (const id of ids) await lifecycle.remove(id, { keepVolume: false }).catch(() => undefined);
    },
    async close() {
      await connection.close();
      await nativeConnection.close();
    },
  };
}

/** The durable harness on its own queues, workers in this process. */
export interface DurableHarness extends Queues {
  cache: ContextCache;
  /** Starts an operation (its sandbox id is the workflow id) and remembers it for cleanup. */
  start(input: OperationInput, workflowId: string): Promise<WorkflowHandle>;
  /** Stops the workers and removes every sandbox this harness's operations used. */
  close(): Promise<void>;
}

export interface Queues {
  brainQueue: string;
  handsQueue: string;
}

export function uniqueQueues(prefix: string): Queues {
  const id = randomUUID().slice(0, 8);
  return { brainQueue: `${prefix}-brain-${id}`, handsQueue: `${prefix}-hands-${id}` };
}

/** Starts an operation on the given queues; its sandbox id is the workflow id unless the input names a session. */
export function startOperation(
  client: Client,
  queues: Queues,
  input: OperationInput,
  workflowId: string,
): Promise<WorkflowHandle> {
  return client.workflow.start(OPERATION_WORKFLOW_TYPE, {
    taskQueue: queues.brainQueue,
    workflowId,
    // The scenarios repeat one call on purpose: loop detection would end them as stuck.
    args: [{ handsTaskQueue: queues.handsQueue, stuck: BENCH_LOOP_LIMITS, ...input }],
  });
}

export async function startDurableHarness(
  ctx: BenchContext,
  modelUrl: string,
  prefix = 'bench',
): Promise<DurableHarness> {
  const queues = uniqueQueues(prefix);
  const { brainQueue, handsQueue } = queues;
  const cache = new ContextCache();
  const common = {
    connection: ctx.nativeConnection,
    namespace: ctx.namespace,
    workflowBundle: { codePath: ctx.workflowBundlePath },
  };
  const workers: Worker[] = [
    await createBrainWorker({
      ...common,
      taskQueue: brainQueue,
      client: ctx.client,
      modelSettings: benchModelSettings(modelUrl),
      cache,
    }),
    await createHandsWorker({ ...common, taskQueue: handsQueue, docker: ctx.docker, image: ctx.image }),
  ];
  const running = Promise.all(workers.map((worker) => worker.run()));
  const sessions = new Set<string>();
  return {
    brainQueue,
    handsQueue,
    cache,
    start(input, workflowId) {
      sessions.add(input.sessionId ?? workflowId);
      return startOperation(ctx.client, queues, input, workflowId);
    },
    async close() {
      for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await ctx.removeSandboxes(sessions);
    },
  };
}

/** A workflow id / sandbox id for a bench run: `bench-<scenario>-<label>-<random>`. */
export const runId = (scenario: string, label: string): string =>
  `bench-${scenario}-${label}-${randomUUID().slice(0, 8)}`;
