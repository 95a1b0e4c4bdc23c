/**
 * Overhead: the same scripted task of N steps (one model call + `bash: true` each), run by the plain
 * in-process loop and by the durable harness, at model latency 0 ms and 200 ms. Both are timed by
 * the scripted server's clock: a step is the gap between two consecutive model requests of a run.
 * Runs alternate plain/durable so drift on a shared machine hits both alike; one short warm-up run of
 * each comes first and is not counted.
 */
import { createHandsActivities } from '../../activities/hands/activities';
import { SandboxManager } from '../../activities/hands/sandbox-manager';
import { createAnthropicClient } from '../../activities/model/client';
import { operationResult } from '../../client/operation-result';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { runId, startDurableHarness, type BenchContext } from '../context';
import { benchModelSettings, goalParam, markerText, requestsOf, stepsScript } from '../model';
import { runPlainLoop } from '../plain-loop';
import type { BenchProfile } from '../profiles';
import type { OverheadPoint, OverheadResult } from '../results';
import { gaps, median, p95, round } from '../stats';

const CHEAP_CALL = { name: 'bash', input: { command: 'true' } };

export async function runOverhead(ctx: BenchContext, profile: BenchProfile['overhead']): Promise<OverheadResult> {
  const server = await startScriptedModelServer({});
  const harness = await startDurableHarness(ctx, server.url, 'bench-overhead');
  const settings = benchModelSettings(server.url);
  const client = createAnthropicClient(settings);
  const hands = createHandsActivities({ manager: new SandboxManager({ docker: ctx.docker, image: ctx.image }) });
  const plainSandboxes: string[] = [];

  const runPlain = async (steps: number): Promise<number[]> => {
    const id = runId('overhead', 'plain');
    plainSandboxes.push(id);
    await runPlainLoop({
      client,
      settings,
      hands,
      sessionId: id,
      goal: `${markerText(id)} steps=${steps}: run cheap commands`,
      maxTurns: steps + 1,
    });
    return timesOf(server, id, steps);
  };
  const runDurable = async (steps: number): Promise<number[]> => {
    const id = runId('overhead', 'durable');
    const result = await operationResult(
      await harness.start(
        { goal: `${markerText(id)} steps=${steps}: run cheap commands`, budget: { maxTurns: steps + 1 } },
        id,
      ),
    );
    if (result.state !== 'completed')
      throw new Error(`overhead: durable run ${id} ended ${result.state}: ${result.reason}`);
    return timesOf(server, id, steps);
  };

  try {
    const points: Record<number, OverheadPoint> = {};
    for (const latencyMs of profile.latencies) {
      server.setScript(
        stepsScript({ steps: (request) => goalParam(request, 'steps') ?? 0, call: () => CHEAP_CALL, latencyMs }),
      );
      await runPlain(2);
      await runDurable(2);
      const plain: number[][] = [];
      const durable: number[][] = [];
      for (let run = 0; run < profile.runs; run++) {
        plain.push(await runPlain(profile.steps));
        durable.push(await runDurable(profile.steps));
        ctx.log(`overhead: latency ${latencyMs} ms, run ${run + 1}/${profile.runs} done`);
      }
      points[latencyMs] = overheadPoint(latencyMs, plain, durable);
    }
    return { stepsPerRun: profile.steps, runs: profile.runs, latency0: points[0]!, latency200: points[200]! };
  } finally {
    await harness.close();
    await ctx.removeSandboxes(plainSandboxes);
    await server.stop();
  }
}

/** Arrival times of a run's model requests; checks the run took every step. */
function timesOf(server: ScriptedModelServer, marker: string, steps: number): number[] {
  const requests = requestsOf(server.requests, marker);
  if (requests.length !== steps + 1)
    throw new Error(`overhead: run ${marker} made ${requests.length} model requests, expected ${steps + 1}`);
  return requests.map((request) => request.receivedAt);
}

/** Per-step figures from each run's request times (the first gap of a run is its container start). */
export function overheadPoint(latencyMs: number, plainRuns: number[][], durableRuns: number[][]): OverheadPoint {
  const steady = (runs: number[][]) => runs.flatMap((times) => gaps(times).slice(1));
  const first = (runs: number[][]) => median(runs.map((times) => gaps(times)[0] ?? Number.NaN));
  const plain = steady(plainRuns);
  const durable = steady(durableRuns);
  const plainMedian = median(plain);
  const durableMedian = median(durable);
  return {
    latencyMs,
    samples: Math.min(plain.length, durable.length),
    plainMsPerStep: round(plainMedian),
    plainP95Ms: round(p95(plain)),
    durableMsPerStep: round(durableMedian),
    durableP95Ms: round(p95(durable)),
    addedMsPerStep: round(durableMedian - plainMedian),
    ratio: round(durableMedian / plainMedian, 3),
    p95AddedMs: round(p95(durable) - p95(plain)),
    firstStepMs: { plain: round(first(plainRuns)), durable: round(first(durableRuns)) },
  };
}
