/**
 * Concurrency: N operations of M steps (model call + `bash: true` each, model latency 0) started at
 * once against one worker process running brain and hands (default worker tuning). Reports how many
 * completed, steps per second over the wall time from the first submit to the last completion, and
 * the worker process's peak RSS (VmHWM).
 */
import { operationResult } from '../../client/operation-result';
import { startScriptedModelServer } from '../../scripted-model/server';
import { runId, startOperation, uniqueQueues, type BenchContext } from '../context';
import { goalParam, markerText, stepsScript } from '../model';
import type { BenchProfile } from '../profiles';
import type { ConcurrencyResult } from '../results';
import { median, p95, round } from '../stats';
import { spawnWorkerChild } from '../worker-child';

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
  const worker = await spawnWorkerChild(
    {
      address: ctx.address,
      namespace: ctx.namespace,
      workflowBundlePath: ctx.workflowBundlePath,
      image: ctx.image,
      modelUrl: server.url,
      ...queues,
    },
    ctx.log,
  );
  const ids = Array.from({ length: profile.operations }, (_, index) => runId('concurrency', `${index}`));
  try {
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
    const completed = outcomes.filter((outcome) => outcome.ok).length;
    const durations = outcomes.map((outcome) => outcome.endedAt - submitted);
    const result: ConcurrencyResult = {
      operations: profile.operations,
      stepsPerOperation: profile.steps,
      completed,
      failed: profile.operations - completed,
      wallMs,
      stepsPerSecond: round((completed * profile.steps) / (wallMs / 1000), 2),
      workerPeakRssMb: round(worker.peakRssMb()),
      operationMs: { median: round(median(durations)), p95: round(p95(durations)) },
    };
    ctx.log(
      `concurrency: ${completed}/${profile.operations} completed in ${(wallMs / 1000).toFixed(1)} s, worker peak RSS ${result.workerPeakRssMb} MiB`,
    );
    return result;
  } finally {
    await worker.stop();
    await ctx.removeSandboxes(ids);
    await server.stop();
  }
}
