/**
 * Concurrency: N operations of M steps (model call + `bash: true` each, model latency 0) started at
 * once against one worker process running brain and hands (default worker tuning, except the sticky
 * failover below). Reports how many completed, steps per second over the wall time from the first
 * submit to the last completion, the worker process's peak RSS (VmHWM) and event-loop delay, every
 * timeout in the operations' histories (under this load a live worker must not miss a heartbeat or
 * sticky-queue timeout: the failover settings are tight, see `workflows/shared/policies.ts`), and where the
 * machine's CPU went (`cpu-usage.ts`).
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { operationResult } from '../../client/operation-result';
import { containerNameOf } from '../../common/sandbox-names';
import { cpuSnapshot, cpuUsageBetween, descendsFrom, threadTimes, type ProcessGroup } from '../cpu-usage';
import { startScriptedModelServer } from '../../scripted-model/server';
import { runId, startOperation, uniqueQueues, type BenchContext } from '../context';
import { goalParam, markerText, stepsScript } from '../model';
import type { BenchProfile } from '../profiles';
import type { ConcurrencyResult } from '../results';
import { median, p95, round } from '../stats';
import { spawnWorkerChild, workerProcessConfig } from '../worker-child';
import { WORKER_ENV } from '../../workers/worker-settings';
import { freePort } from '../../platform/dev-server';
import { scrapeWorkerMetrics } from '../worker-metrics';

/**
 * The worker's `AGENT_STICKY_FAILOVER` here. 200 operations on two cores keep every workflow task
 * waiting tens of seconds for the one worker; past the default 5 s each would move to the shared
 * queue and be replayed (942 such timeouts in a run with the default). docs/crash-safety.md advises a
 * longer failover for a brain worker loaded far beyond its cores, and this is that worker.
 */
export const STICKY_FAILOVER_UNDER_LOAD = '60s';

export async function runConcurrency(
  ctx: BenchContext,
  profile: BenchProfile['concurrency'],
): Promise<ConcurrencyResult> {
  const server = await startScriptedModelServer({
    script: stepsScript({
      steps: (request) => goalParam(request, 'steps') ?? 0,
      call: () => ({ name: 'bash', input: { command: 'true' } }),
    }),
  });
  const queues = uniqueQueues('bench-concurrency');
  const metricsAddress = `127.0.0.1:${await freePort()}`;
  const worker = await spawnWorkerChild(workerProcessConfig(ctx, server.url, queues, { metricsAddress }), ctx.log, {
    env: { [WORKER_ENV.stickyFailover]: STICKY_FAILOVER_UNDER_LOAD },
  });
  const ids = Array.from({ length: profile.operations }, (_, index) => runId('concurrency', `${index}`));
  try {
    await worker.eventLoopDelay(); // from here on
    const cpuBefore = cpuSnapshot();
    const mainBefore = threadTimes(worker.pid);
    const submitted = Date.now();
    const outcomes = await Promise.all(
      ids.map(async (id) => {
        try {
          const handle = await startOperation(
            ctx.client,
            queues,
            {
              goal: `${markerText(id)} steps=${profile.steps}: run cheap commands`,
              budget: { maxTurns: profile.steps + 1 },
              // Kept (and removed by the bench afterwards) so that their CPU time is still counted at the end.
              keepContainer: true,
            },
            id,
          );
          const result = await operationResult(handle);
          return { ok: result.state === 'completed', endedAt: Date.now() };
        } catch (err) {
          ctx.log(`concurrency: ${id} failed: ${(err as Error).message}`);
          return { ok: false, endedAt: Date.now() };
        }
      }),
    );
    const wallMs = Math.max(...outcomes.map((outcome) => outcome.endedAt)) - submitted;
    const cpuAfter = cpuSnapshot();
    const mainAfter = threadTimes(worker.pid);
    const loop = await worker.eventLoopDelay();
    const workerMetrics = await scrapeWorkerMetrics(`http://${metricsAddress}/metrics`).catch((err: Error) => {
      ctx.log(`concurrency: the worker's metrics could not be read: ${err.message}`);
      return undefined;
    });
    const cpu =
      cpuBefore && cpuAfter
        ? cpuUsageBetween(cpuBefore, cpuAfter, await processGroups(ctx, worker.pid, ids))
        : undefined;
    const timeouts = await timeoutsIn(ctx.client, ids);
    const completed = outcomes.filter((outcome) => outcome.ok).length;
    const durations = outcomes.map((outcome) => outcome.endedAt - submitted);
    const result: ConcurrencyResult = {
      operations: profile.operations,
      stepsPerOperation: profile.steps,
      completed,
      failed: profile.operations - completed,
      wallMs,
      stepsPerSecond: round((completed * profile.steps) / (wallMs / 1000), 2),
      stickyFailover: STICKY_FAILOVER_UNDER_LOAD,
      workerPeakRssMb: round(worker.peakRssMb()),
      workerEventLoopDelayMs: { p99: loop.p99Ms, max: loop.maxMs },
      ...(mainBefore && mainAfter
        ? {
            workerMainThread: {
              onCpuS: round((mainAfter.onCpuNs - mainBefore.onCpuNs) / 1e9),
              waitingS: round((mainAfter.waitingNs - mainBefore.waitingNs) / 1e9),
            },
          }
        : {}),
      ...(workerMetrics ? { workerMetrics } : {}),
      operationMs: { median: round(median(durations)), p95: round(p95(durations)) },
      timeouts,
      ...(cpu ? { cpu } : {}),
    };
    ctx.log(
      `concurrency: ${completed}/${profile.operations} completed in ${(wallMs / 1000).toFixed(1)} s, worker peak RSS ${result.workerPeakRssMb} MiB, ` +
        `event loop delay p99 ${loop.p99Ms} ms (max ${loop.maxMs} ms), ` +
        `timeouts: ${timeouts.activity} activity, ${timeouts.workflowTask} workflow task`,
    );
    return result;
  } finally {
    await worker.stop();
    await ctx.removeSandboxes(ids);
    await server.stop();
  }
}

/** Timeouts and retried activities over the operations' histories (every run of each). */
async function timeoutsIn(client: Client, ids: readonly string[]): Promise<ConcurrencyResult['timeouts']> {
  const EventType = temporal.api.enums.v1.EventType;
  const counts = { activity: 0, workflowTask: 0, retriedActivities: 0, workflowTaskStickyScheduleToStart: 0 };
  const causes = new Map<string, { activity: string; failure: string; count: number; withHeartbeat: number }>();
  for (const id of ids) {
    const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const typeOf = new Map<string, string>();
    for (const event of events) {
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled) typeOf.set(String(event.eventId), scheduled.activityType?.name ?? '?');
      const started = event.activityTaskStartedEventAttributes;
      if (started && (started.attempt ?? 1) > 1) {
        const activity = typeOf.get(String(started.scheduledEventId)) ?? '?';
        // Ids and numbers vary per call; the cause is the message's shape.
        const failure = (started.lastFailure?.message ?? '(no failure recorded)')
          .replace(/[0-9a-f-]{8,}|\d+/g, '#')
          .slice(0, 160);
        const key = `${activity}\u0000${failure}`;
        const entry = causes.get(key) ?? { activity, failure, count: 0, withHeartbeat: 0 };
        entry.count += 1;
        if (started.lastFailure?.timeoutFailureInfo?.lastHeartbeatDetails?.payloads?.length) entry.withHeartbeat += 1;
        causes.set(key, entry);
      }
      if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT) counts.activity += 1;
      if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) {
        counts.workflowTask += 1;
        if (
          event.workflowTaskTimedOutEventAttributes?.timeoutType ===
          temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START
        )
          counts.workflowTaskStickyScheduleToStart += 1;
      }
      if ((event.activityTaskStartedEventAttributes?.attempt ?? 1) > 1) counts.retriedActivities += 1;
    }
  }
  const retryCauses = [...causes.values()].sort((a, b) => b.count - a.count).slice(0, 8);
  return { ...counts, retryCauses };
}

/** The process groups' labels (the start of each), for the CPU-per-step figures. */
export const CPU_GROUP_LABELS = {
  worker: 'worker process',
  server: 'Temporal dev server',
  containers: "the operations' containers",
  /** Inside the containers: the executors and what they run (run wrappers, shells, probes, git). */
  containersInside: "the operations' containers: executors",
  /** Docker's processes for each container on the host: its shim and the `runc` calls it reaps. */
  containerShims: "the operations' containers: shims",
} as const;

/** The processes whose CPU time the scenario reports (the Docker daemons are shared with anything else using Docker). */
async function processGroups(ctx: BenchContext, workerPid: number, ids: readonly string[]): Promise<ProcessGroup[]> {
  const containerIds = new Set<string>();
  for (const id of ids) {
    const info = await ctx.docker
      .getContainer(containerNameOf(id))
      .inspect()
      .catch(() => undefined);
    if (info) containerIds.add(info.Id);
  }
  const port = ctx.address.split(':').at(-1);
  return [
    {
      label: 'worker process (brain + hands; its egress proxy)',
      matches: (pid, _p, all) => descendsFrom(all, pid, workerPid),
    },
    {
      label: 'Temporal dev server',
      matches: (_pid, p) => p.comm === 'temporal' && p.args.includes(`--port ${port}`),
    },
    { label: 'dockerd', matches: (_pid, p) => p.comm === 'dockerd' },
    { label: 'containerd', matches: (_pid, p) => p.comm === 'containerd' },
    {
      label: "the operations' containers: executors, tool processes (inside the containers)",
      matches: (_pid, p) => [...containerIds].some((id) => p.cgroup.includes(id)),
    },
    {
      label: "the operations' containers: shims, runc (Docker's, on the host)",
      matches: (_pid, p) => p.comm.startsWith('containerd-shim') && [...containerIds].some((id) => p.args.includes(id)),
    },
    { label: 'bench process (scripted model server, client)', matches: (pid) => pid === process.pid },
  ];
}
