/**
 * A worker process for the overhead, concurrency, recovery and cluster scenarios: the brain and hands
 * workers of `workers/workers.ts` (as `agent worker dev` runs them; or the brain alone, or one hands
 * host, as `agent worker brain` / `agent worker hands` do), in a child process of their own so the
 * bench can measure its memory and SIGKILL it. argv[2] is a `WorkerProcessConfig` as JSON; the
 * process sends `{ type: 'ready', monotonicUs }` over IPC once both workers poll, and shuts down gracefully on
 * SIGTERM/SIGINT (the Temporal runtime's default shutdown signals).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Docker from 'dockerode';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { dockerClient } from '../platform/docker-engine';
import { installRuntime } from '../workers/runtime';
import { createBrainWorker, createHandsHostWorkers, createHandsWorker } from '../workers/workers';
import { benchModelSettings } from './model';

export interface WorkerProcessConfig {
  address: string;
  namespace: string;
  brainQueue: string;
  handsQueue: string;
  workflowBundlePath: string;
  image: string;
  modelUrl: string;
  /** Serve the SDK's metrics (Prometheus) on this `host:port`. */
  metricsAddress?: string;
  /** `dev` (default): brain and hands; `brain`: the brain alone; `hands`: the hands host `handsHost`. */
  role?: 'dev' | 'brain' | 'hands';
  /** The hands host of role `hands`: its name, its sandboxes' name prefix and its Docker engine (`DOCKER_HOST`). */
  handsHost?: { host: string; prefix: string; dockerHost?: string };
}

async function main(config: WorkerProcessConfig): Promise<void> {
  if (config.metricsAddress) {
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { metrics: { prometheus: { bindAddress: config.metricsAddress } } },
    });
  } else {
    installRuntime(process.env.AGENT_LOG_LEVEL ? undefined : 'ERROR');
  }
  const connection = await Connection.connect({ address: config.address });
  const nativeConnection = await NativeConnection.connect({ address: config.address });
  const common = {
    connection: nativeConnection,
    namespace: config.namespace,
    workflowBundle: { codePath: config.workflowBundlePath },
  };
  const role = config.role ?? 'dev';
  const workers = [];
  if (role !== 'hands')
    workers.push(
      await createBrainWorker({
        ...common,
        taskQueue: config.brainQueue,
        client: new Client({ connection, namespace: config.namespace }),
        modelSettings: benchModelSettings(config.modelUrl),
      }),
    );
  if (role === 'dev')
    workers.push(
      await createHandsWorker({ ...common, taskQueue: config.handsQueue, docker: dockerClient(), image: config.image }),
    );
  if (role === 'hands') {
    const host = config.handsHost;
    if (!host) throw new Error('role hands needs handsHost');
    const docker = host.dockerHost
      ? new Docker({ socketPath: host.dockerHost.replace(/^unix:\/\//, '') })
      : dockerClient();
    workers.push(
      ...(await createHandsHostWorkers({
        ...common,
        taskQueue: config.handsQueue,
        docker,
        image: config.image,
        host: host.host,
        namePrefix: host.prefix,
      })),
    );
  }
  const running = Promise.all(workers.map((worker) => worker.run()));
  answerEventLoopDelay();
  // The monotonic clock of V8's CPU profiles: what came before is start-up.
  process.send?.({ type: 'ready', monotonicUs: Number(process.hrtime.bigint() / 1000n) });
  await running;
  await nativeConnection.close();
  await connection.close();
}

/**
 * How late the main thread's event loop ran (activities, heartbeats, the SDK's calls into the worker
 * core), since the previous question: `{ type: 'event-loop' }` over IPC, answered with
 * `{ type: 'event-loop', p99Ms, maxMs }`. A heartbeat that is due runs only when the loop gets to it.
 */
function answerEventLoopDelay(): void {
  const delay = monitorEventLoopDelay({ resolution: 20 });
  delay.enable();
  process.on('message', (message: { type?: string }) => {
    if (message?.type !== 'event-loop') return;
    const ms = (ns: number) => Math.round(ns / 1e4) / 100;
    process.send?.({ type: 'event-loop', p99Ms: ms(delay.percentile(99)), maxMs: ms(delay.max) });
    delay.reset();
  });
}

main(JSON.parse(process.argv[2] ?? '{}') as WorkerProcessConfig).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
