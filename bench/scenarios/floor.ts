/**
 * Temporal's floor for the harness's step shape (`bench/floor/workflow.ts`: per step one activity on
 * a brain queue, one on a hands queue, nothing else), on the same server, with the harness's worker
 * settings, in a worker child process as the harness's runs:
 *  - one workflow at a time: ms per step (the gap between consecutive "model calls", as the overhead
 *    scenario times the harness), median and p95; and once more with the overhead scenario's 200 ms
 *    model latency, whose gap less the latency is Temporal's time per step on a worker that idles;
 *  - as many workflows × steps started at once as the concurrency scenario runs, with the same
 *    sticky failover: steps per second, and CPU per step of the worker and the server.
 * Every figure the harness can be judged by relative to it is (`results.ts`, targets).
 */
import * as path from 'node:path';
import { cpuSnapshot, cpuUsageBetween, descendsFrom, type CpuUsage } from '../cpu-usage';
import { runId, uniqueQueues, type BenchContext } from '../context';
import { FLOOR_WORKFLOW_TYPE, type FloorInput } from '../floor/workflow';
import { measureHistory } from '../history-size';
import type { BenchProfile } from '../profiles';
import type { FloorResult } from '../results';
import { median, p95, round } from '../stats';
import { spawnWorkerChild, workerProcessConfig } from '../worker-child';
import { WORKER_ENV } from '../../workers/worker-settings';
import { STICKY_FAILOVER_UNDER_LOAD } from './concurrency';

export async function runFloor(
  ctx: BenchContext,
  profile: BenchProfile['floor'],
  concurrency: BenchProfile['concurrency'],
  latency: BenchProfile['overhead']['latency200'],
): Promise<FloorResult> {
  const queues = uniqueQueues('bench-floor');
  const worker = await spawnWorkerChild(workerProcessConfig(ctx, 'unused', queues), ctx.log, {
    entry: path.join(__dirname, '..', 'floor', 'worker-process.ts'),
    env: { [WORKER_ENV.stickyFailover]: STICKY_FAILOVER_UNDER_LOAD },
  });
  const run = (
    steps: number,
    label: string,
    workflowId = runId('floor', label),
    modelLatencyMs = 0,
  ): Promise<number[]> =>
    ctx.client.workflow.execute(FLOOR_WORKFLOW_TYPE, {
      taskQueue: queues.brainQueue,
      workflowId,
      args: [{ steps, handsQueue: queues.handsQueue, modelLatencyMs } satisfies FloorInput],
    });
  // Step gaps of one run, the first (the workflow's start) left out.
  const gapsOf = (times: number[]): number[] => times.slice(2).map((time, index) => time - times[index + 1]!);
  try {
    await run(3, 'warm-up');
    const gaps: number[] = [];
    let lastSingle = '';
    for (let index = 0; index < profile.runs; index++) {
      lastSingle = runId('floor', `single-${index}`);
      // The first gap includes the workflow's start, as the harness's first step includes the container's.
      gaps.push(...gapsOf(await run(profile.steps, `single-${index}`, lastSingle)));
    }
    ctx.log(`floor: one workflow at a time: ${median(gaps)} ms per step (median of ${gaps.length})`);
    const idleAdded: number[] = [];
    for (let index = 0; index < latency.runs; index++) {
      const times = await run(latency.steps, `latency-${latency.latencyMs}-${index}`, undefined, latency.latencyMs);
      idleAdded.push(...gapsOf(times).map((gap) => gap - latency.latencyMs));
    }
    const atModelLatency = {
      latencyMs: latency.latencyMs,
      stepsPerRun: latency.steps,
      samples: idleAdded.length,
      msPerStep: round(latency.latencyMs + median(idleAdded)),
      addedMsPerStep: round(median(idleAdded)),
      p95AddedMs: round(p95(idleAdded)),
    };
    ctx.log(
      `floor: at model latency ${latency.latencyMs} ms: ${atModelLatency.addedMsPerStep} ms per step beyond it (median of ${idleAdded.length})`,
    );
    // The same events as the harness's step with nothing in them: what a step's history costs in Temporal itself.
    const history = await measureHistory(ctx.client, lastSingle);
    const historyBytesPerStep = round(history.bytes / profile.steps);
    ctx.log(`floor: history ${historyBytesPerStep} B per step (${history.events} events for ${profile.steps} steps)`);

    const cpuBefore = cpuSnapshot();
    const submitted = Date.now();
    await Promise.all(
      Array.from({ length: concurrency.operations }, (_, index) => run(concurrency.steps, `concurrent-${index}`)),
    );
    const wallMs = Date.now() - submitted;
    const cpuAfter = cpuSnapshot();
    const steps = concurrency.operations * concurrency.steps;
    const port = ctx.address.split(':').at(-1);
    const cpu =
      cpuBefore && cpuAfter
        ? cpuUsageBetween(cpuBefore, cpuAfter, [
            { label: 'worker', matches: (pid, _p, all) => descendsFrom(all, pid, worker.pid) },
            {
              label: 'server',
              matches: (_pid, p) => p.comm === 'temporal' && p.args.includes(`--port ${port}`),
            },
          ])
        : undefined;
    const result: FloorResult = {
      stepsPerRun: profile.steps,
      runs: profile.runs,
      samples: gaps.length,
      msPerStep: round(median(gaps)),
      p95Ms: round(p95(gaps)),
      atModelLatency,
      historyBytesPerStep,
      workflows: concurrency.operations,
      stepsPerWorkflow: concurrency.steps,
      wallMs,
      stepsPerSecond: round(steps / (wallMs / 1000), 2),
      ...(cpu ? { cpuMsPerStep: cpuPerStep(cpu, steps) } : {}),
    };
    ctx.log(
      `floor: ${concurrency.operations} × ${concurrency.steps} at once: ${result.stepsPerSecond} steps/s` +
        (result.cpuMsPerStep ? `, CPU ${result.cpuMsPerStep.total} ms per step` : ''),
    );
    return result;
  } finally {
    await worker.stop();
  }
}

/** A run's CPU per step, in ms: the whole machine's busy time, and the worker's and server's parts. */
function cpuPerStep(cpu: CpuUsage, steps: number): NonNullable<FloorResult['cpuMsPerStep']> {
  const of = (label: string) => cpu.byGroup.find((row) => row.label === label)?.cpuS ?? 0;
  return {
    total: round((cpu.machineBusyS * 1000) / steps, 2),
    worker: round((of('worker') * 1000) / steps, 2),
    server: round((of('server') * 1000) / steps, 2),
  };
}
