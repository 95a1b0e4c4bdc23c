/**
 * Runs operations end to end for tests: the scripted Messages API server, a brain worker and a hands
 * worker on unique task queues (shared workflow bundle, real Temporal, real Docker).
 */
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import Docker from 'dockerode';
import { ContextCache } from '../../activities/brain/context-cache';
import type { ModelSettings } from '../../activities/model/settings';
import { OPERATION_WORKFLOW_TYPE, OperationInput } from '../../common/operation';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
  type ScriptedModelServerOptions,
} from '../../scripted-model/server';
import type { ModelScript } from '../../scripted-model/script';
import {
  createBrainWorker,
  createHandsWorker,
  type BrainWorkerOptions,
  type HandsWorkerOptions,
} from '../../workers/workers';
import { testPlatform } from './env';
import { connectTestTemporal, TestTemporal } from './temporal';
import { removeSandboxes } from './hands';

export interface OperationHarness {
  temporal: TestTemporal;
  model: ScriptedModelServer;
  cache: ContextCache;
  docker: Docker;
  brainQueue: string;
  handsQueue: string;
  /** Starts an operation on the harness's queues. */
  start(input: OperationInput, workflowId?: string): Promise<WorkflowHandle>;
  /** Removes this session's container and volume when the harness closes. */
  removeOnClose(sessionId: string): void;
  close(): Promise<void>;
}

export function testModelSettings(baseURL: string): ModelSettings {
  return {
    apiKey: 'test-key',
    baseURL,
    model: 'scripted-model',
    maxTokens: 4096,
    requestTimeoutMs: 60_000,
    streamIdleTimeoutMs: 60_000,
    promptCacheTtl: '5m',
  };
}

export interface OperationHarnessOptions {
  /** Options of the scripted model server beyond its script. */
  model?: Omit<ScriptedModelServerOptions, 'script'>;
  /** Model settings beyond the test defaults (e.g. a short `streamIdleTimeoutMs`). */
  modelSettings?: Partial<ModelSettings>;
  /** A dev server of the test's own (default: the shared one). */
  temporalAddress?: string;
  /** The brain worker's MCP settings, secret store and worker settings (default: from the environment). */
  brain?: Pick<BrainWorkerOptions, 'mcp' | 'secrets' | 'settings'>;
  /** The hands worker's hook settings (default: from the environment). */
  hands?: Pick<HandsWorkerOptions, 'hooks'>;
}

export async function startOperationHarness(
  script: ModelScript = [],
  options: OperationHarnessOptions = {},
): Promise<OperationHarness> {
  const temporal = await connectTestTemporal(options.temporalAddress);
  const model = await startScriptedModelServer({ ...options.model, script });
  const cache = new ContextCache();
  const docker = new Docker();
  const id = randomUUID().slice(0, 8);
  const brainQueue = `brain-${id}`;
  const handsQueue = `hands-${id}`;
  const { namespace, workflowBundlePath, sandboxImage } = testPlatform();
  const workers: Worker[] = [
    await createBrainWorker({
      connection: temporal.nativeConnection,
      namespace,
      taskQueue: brainQueue,
      client: temporal.client,
      modelSettings: { ...testModelSettings(model.url), ...options.modelSettings },
      cache,
      workflowBundle: { codePath: workflowBundlePath },
      ...options.brain,
    }),
    await createHandsWorker({
      connection: temporal.nativeConnection,
      namespace,
      taskQueue: handsQueue,
      docker,
      image: sandboxImage,
      ...options.hands,
    }),
  ];
  const running = workers.map((worker) => worker.run());
  const sessions: string[] = [];
  return {
    temporal,
    model,
    cache,
    docker,
    brainQueue,
    handsQueue,
    async start(input, workflowId = `op-test-${randomUUID().slice(0, 8)}`) {
      const sessionId = input.sessionId ?? workflowId;
      sessions.push(sessionId);
      return temporal.client.workflow.start(OPERATION_WORKFLOW_TYPE, {
        taskQueue: brainQueue,
        workflowId,
        args: [{ handsTaskQueue: handsQueue, ...input }],
      });
    },
    removeOnClose(sessionId) {
      sessions.push(sessionId);
    },
    async close() {
      for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
      await Promise.all(running);
      await model.stop();
      await removeSandboxes(sessions);
      await temporal.close();
    },
  };
}

/**
 * Polls `check` until it returns a value; for waiting on observable state, never on time. The limit
 * only ends a hang: what takes 20 s here takes a minute on the slowest machine of the kind.
 */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 180_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
