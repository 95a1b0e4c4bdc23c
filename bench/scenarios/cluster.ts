/**
 * On a Temporal cluster: the concurrency scenario's load (N operations × M steps of a model call and
 * `bash: true`, model latency 0, started at once) run twice in the same run, side by side — on the
 * bench's dev server with one worker process (brain and hands, as `agent worker dev`), and on the
 * cluster of `npm run cluster` (four services, PostgreSQL) with two brain worker processes and two
 * hands hosts, each its own process: host-a on the default Docker engine, host-b on a second
 * `dockerd` standing for a second machine, both polling one shared hands queue. Steps per second,
 * operation time, every worker process's peak RSS, and how many operations each hands host ran.
 *
 * The cluster is started when it is not running (and stopped again afterwards); building its server
 * from the Go module the first time takes minutes, outside the timed part.
 */
import { Client, Connection } from '@temporalio/client';
import { operationResult } from '../../client/operation-result';
import type Docker from 'dockerode';
import { createSandboxes } from '../../activities/hands/sandboxes';
import { ensureSandboxTools } from '../../platform/sandbox-tools';
import { ensureExtraDockerEngine } from '../../platform/docker-engines';
import {
  clusterLayout,
  clusterStatus,
  devServerVersion,
  startCluster,
  stopCluster,
} from '../../platform/temporal-cluster';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { WORKER_ENV } from '../../workers/worker-settings';
import { runId, startOperation, uniqueQueues, type BenchContext, type Queues } from '../context';
import { goalParam, markerText, stepsScript } from '../model';
import type { BenchProfile } from '../profiles';
import type { ClusterResult, ClusterSide } from '../results';
import { median, p95, round } from '../stats';
import { spawnWorkerChild, workerProcessConfig, type WorkerChild } from '../worker-child';
import { STICKY_FAILOVER_UNDER_LOAD } from './concurrency';

const PREFIX = { 'host-a': 'bencha-', 'host-b': 'benchb-' } as const;

export async function runCluster(ctx: BenchContext, profile: BenchProfile['cluster']): Promise<ClusterResult> {
  const server = await startScriptedModelServer({
    script: stepsScript({
      steps: (request) => goalParam(request, 'steps') ?? 0,
      call: () => ({ name: 'bash', input: { command: 'true' } }),
    }),
  });
  const layout = clusterLayout(await devServerVersion());
  const startedHere = !(await clusterStatus(layout)).serving;
  try {
    const devServer = await devServerSide(ctx, server, profile);
    if (startedHere) ctx.log('cluster: starting the Temporal cluster (npm run cluster -- start)');
    await startCluster(ctx.log);
    const cluster = await clusterSide(ctx, server, profile, layout.address);
    return {
      operations: profile.operations,
      stepsPerOperation: profile.steps,
      shards: layout.shards,
      devServer,
      cluster,
    };
  } finally {
    await server.stop();
    if (startedHere) await stopCluster(ctx.log).catch((err: Error) => ctx.log(`cluster: stop failed: ${err.message}`));
  }
}

/** One worker process (brain and hands) on the bench's dev server. */
async function devServerSide(
  ctx: BenchContext,
  server: ScriptedModelServer,
  profile: BenchProfile['cluster'],
): Promise<ClusterSide> {
  const queues = uniqueQueues('bench-cluster-dev');
  const worker = await spawnWorkerChild(workerProcessConfig(ctx, server.url, queues), ctx.log, {
    env: { [WORKER_ENV.stickyFailover]: STICKY_FAILOVER_UNDER_LOAD },
  });
  const ids = Array.from({ length: profile.operations }, (_, i) => runId('cluster', `dev-${i}`));
  try {
    const load = await runLoad(ctx.client, queues, ids, profile);
    return { ...load, workers: [{ role: 'brain + hands', peakRssMb: round(worker.peakRssMb()) }], hosts: {} };
  } finally {
    await worker.stop();
    await ctx.removeSandboxes(ids);
  }
}

/** Two brain workers and two hands hosts on two Docker engines, each a process, on the cluster. */
async function clusterSide(
  ctx: BenchContext,
  server: ScriptedModelServer,
  profile: BenchProfile['cluster'],
  address: string,
): Promise<ClusterSide> {
  const engineB = await ensureExtraDockerEngine('hands-b', { images: [ctx.image] });
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace: 'default' });
  const queues = uniqueQueues('bench-cluster');
  const base = workerProcessConfig(ctx, server.url, queues, { address, namespace: 'default' });
  const env = { env: { [WORKER_ENV.stickyFailover]: STICKY_FAILOVER_UNDER_LOAD } };
  const workers: Array<{ role: string; host?: string; child: WorkerChild }> = [];
  const ids = Array.from({ length: profile.operations }, (_, i) => runId('cluster', `c-${i}`));
  try {
    for (const name of ['brain-1', 'brain-2'])
      workers.push({ role: name, child: await spawnWorkerChild({ ...base, role: 'brain' }, ctx.log, env) });
    for (const host of ['host-a', 'host-b'] as const) {
      const handsHost = {
        host,
        prefix: PREFIX[host],
        ...(host === 'host-b' ? { dockerHost: engineB.dockerHost } : {}),
      };
      workers.push({
        role: 'hands',
        host,
        child: await spawnWorkerChild({ ...base, role: 'hands', handsHost }, ctx.log, env),
      });
    }
    const load = await runLoad(client, queues, ids, profile);
    const hosts: Record<string, number> = {};
    for (const id of ids) {
      const host = (await operationResult(client.workflow.getHandle(id))).handsHost ?? 'none';
      hosts[host] = (hosts[host] ?? 0) + 1;
    }
    return {
      ...load,
      workers: workers.map((w) => ({
        role: w.host ? `hands ${w.host}` : w.role,
        peakRssMb: round(w.child.peakRssMb()),
      })),
      hosts,
    };
  } finally {
    for (const worker of workers) await worker.child.stop();
    await removeSandboxes(ctx, ctx.docker, PREFIX['host-a'], ids);
    await removeSandboxes(ctx, engineB.docker, PREFIX['host-b'], ids);
    await connection.close();
  }
}

/** Starts the operations at once and waits for them: completed, wall time, steps per second, operation times. */
async function runLoad(
  client: Client,
  queues: Queues,
  ids: readonly string[],
  profile: BenchProfile['cluster'],
): Promise<Omit<ClusterSide, 'workers' | 'hosts'>> {
  const submitted = Date.now();
  const outcomes = await Promise.all(
    ids.map(async (id) => {
      try {
        const handle = await startOperation(
          client,
          queues,
          {
            goal: `${markerText(id)} steps=${profile.steps}: run cheap commands`,
            budget: { maxTurns: profile.steps + 1 },
          },
          id,
        );
        const result = await operationResult(handle);
        return { ok: result.state === 'completed', endedAt: Date.now() };
      } catch {
        return { ok: false, endedAt: Date.now() };
      }
    }),
  );
  const wallMs = Math.max(...outcomes.map((o) => o.endedAt)) - submitted;
  const completed = outcomes.filter((o) => o.ok).length;
  const durations = outcomes.map((o) => o.endedAt - submitted);
  return {
    completed,
    failed: ids.length - completed,
    wallMs,
    stepsPerSecond: round((completed * profile.steps) / (wallMs / 1000), 2),
    operationMs: { median: round(median(durations)), p95: round(p95(durations)) },
  };
}

/** Removes the sandboxes (container, volumes) of `ids` under `namePrefix` on `docker`; missing ones are fine. */
async function removeSandboxes(ctx: BenchContext, docker: Docker, namePrefix: string, ids: readonly string[]) {
  const { lifecycle } = createSandboxes({
    docker,
    image: ctx.image,
    sandboxTools: ensureSandboxTools().path,
    namePrefix,
  });
  for (const id of ids) await lifecycle.remove(id, { keepVolume: false }).catch(() => undefined);
}
