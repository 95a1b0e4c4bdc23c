/**
 * Overhead: the same scripted task of N steps (one model call + `bash: true` each), run by the plain
 * in-process loop and by the durable harness, at model latency 0, 200 and 500 ms. Both are timed by
 * the scripted server's clock: a step is the gap between two consecutive model requests of a run.
 * Runs alternate plain/durable so drift on a shared machine hits both alike; one short warm-up run of
 * each comes first and is not counted. The latency-0 runs are long (500 steps in the full run) and
 * are also reported in segments (steps 1–10, 10–100, 100–500), so a slowdown of long runs shows.
 *
 * The durable harness runs as deployed: brain and hands workers in a worker process of their own
 * (`worker-process.ts`), which `--profile` starts with V8's CPU profiler. Both run tool commands
 * through the sandbox's executor; at latency 0 the plain loop also runs with a `docker exec` per
 * command (`executor: false`), alternating with the others, so the executor's gain is measured in the
 * same run (`plainStep`); and the durable harness runs a second time on a worker process with
 * `AGENT_WORKFLOW_STACK_TRACES=off`, so what the SDK's stack-trace recording costs is measured in the
 * same run too (`stackTracesOff`).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createHandsActivities } from '../../activities/hands/activities';
import { createSandboxes } from '../../activities/hands/sandboxes';
import { createAnthropicClient } from '../../activities/model/client';
import { operationResult } from '../../client/operation-result';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { runId, startOperation, uniqueQueues, type BenchContext } from '../context';
import { summarizeCpuProfiles } from '../cpu-profile';
import { stepTimeline } from '../step-timeline';
import { scrapeWorkerMetrics } from '../worker-metrics';
import { freePort } from '../../platform/dev-server';
import { ensureSandboxTools } from '../../platform/sandbox-tools';
import { benchModelSettings, goalParam, markerText, requestsOf, stepsScript } from '../model';
import { runPlainLoop } from '../plain-loop';
import type { BenchProfile, OverheadRuns } from '../profiles';
import type { HandsActivities } from '../../common/hands';
import type {
  OverheadPoint,
  OverheadResult,
  OverheadSegment,
  PlainStep,
  StackTracesOff,
  WorkerMetrics,
} from '../results';
import { gaps, median, p95, round } from '../stats';
import { spawnWorkerChild, workerProcessConfig } from '../worker-child';
import { WORKER_ENV } from '../../workers/worker-settings';

const CHEAP_CALL = { name: 'bash', input: { command: 'true' } };
/** Step ranges of the long runs (1-based, inclusive; step 1 — the container's creation — is left out). */
const SEGMENTS: readonly [number, number][] = [
  [1, 10],
  [10, 100],
  [100, 500],
];

export interface OverheadOptions {
  /** Where to write the worker's CPU profiles (`--profile`); none when undefined. */
  cpuProfileDir?: string;
  /** The results directory (profile paths are reported relative to it). */
  outDir: string;
}

export async function runOverhead(
  ctx: BenchContext,
  profile: BenchProfile['overhead'],
  options: OverheadOptions,
): Promise<OverheadResult> {
  const server = await startScriptedModelServer({});
  const queues = uniqueQueues('bench-overhead');
  if (options.cpuProfileDir) fs.mkdirSync(options.cpuProfileDir, { recursive: true });
  const profilesBefore = new Set(listProfiles(options.cpuProfileDir));
  const metricsAddress = `127.0.0.1:${await freePort()}`;
  const worker = await spawnWorkerChild(workerProcessConfig(ctx, server.url, queues, { metricsAddress }), ctx.log, {
    cpuProfileDir: options.cpuProfileDir,
    env: { [WORKER_ENV.workflowStackTraces]: 'on' },
  });
  const tracesOffQueues = uniqueQueues('bench-overhead-traces-off');
  const tracesOffMetrics = `127.0.0.1:${await freePort()}`;
  const tracesOffWorker = await spawnWorkerChild(
    workerProcessConfig(ctx, server.url, tracesOffQueues, { metricsAddress: tracesOffMetrics }),
    ctx.log,
    { env: { [WORKER_ENV.workflowStackTraces]: 'off' } },
  );
  const settings = benchModelSettings(server.url);
  const client = createAnthropicClient(settings);
  const sandbox = { docker: ctx.docker, image: ctx.image, sandboxTools: ensureSandboxTools().path };
  const withExecutor = createSandboxes(sandbox);
  const withDockerExec = createSandboxes({ ...sandbox, executor: false });
  const hands: HandsActivities = createHandsActivities({ sandboxes: withExecutor });
  const handsDockerExec: HandsActivities = createHandsActivities({ sandboxes: withDockerExec });
  const sandboxes: string[] = [];

  const runPlain = async (steps: number, via: HandsActivities = hands): Promise<number[]> => {
    const id = runId('overhead', via === hands ? 'plain' : 'plain-docker-exec');
    sandboxes.push(id);
    await runPlainLoop({
      client,
      settings,
      hands: via,
      sessionId: id,
      goal: `${markerText(id)} steps=${steps}: run cheap commands`,
      maxTurns: steps + 1,
    });
    return timesOf(server, id, steps);
  };
  let longest = { steps: 0, id: '' };
  let at200: string | undefined;
  const runDurable = async (steps: number, on = queues): Promise<number[]> => {
    const id = runId('overhead', 'durable');
    sandboxes.push(id);
    if (steps > longest.steps && on === queues) longest = { steps, id };
    if (latency === 200 && steps > 2) at200 ??= id;
    const input = { goal: `${markerText(id)} steps=${steps}: run cheap commands`, budget: { maxTurns: steps + 1 } };
    const result = await operationResult(await startOperation(ctx.client, on, input, id));
    if (result.state !== 'completed')
      throw new Error(`overhead: durable run ${id} ended ${result.state}: ${result.reason}`);
    return timesOf(server, id, steps);
  };

  let latency = 0;
  const useLatency = (latencyMs: number) => {
    latency = latencyMs;
    server.setScript(
      stepsScript({
        steps: (request) => goalParam(request, 'steps') ?? 0,
        call: () => CHEAP_CALL,
        latencyMs,
      }),
    );
  };

  /**
   * One durable run at model latency 0 on a second worker with the CPU profiler on: where the
   * worker's CPU goes per step, without slowing the timed runs.
   */
  const profiledPass = async (steps: number): Promise<NonNullable<OverheadResult['cpuProfile']>> => {
    const dir = path.join(options.outDir, 'profile');
    fs.mkdirSync(dir, { recursive: true });
    const before = new Set(listProfiles(dir));
    const profiledQueues = uniqueQueues('bench-overhead-profiled');
    const profiled = await spawnWorkerChild(workerProcessConfig(ctx, server.url, profiledQueues), ctx.log, {
      cpuProfileDir: dir,
    });
    try {
      useLatency(0);
      await runDurable(steps, profiledQueues);
    } finally {
      await profiled.stop();
    }
    ctx.log(`overhead: profiled run (${steps} steps) done`);
    return {
      ...summarizeCpuProfiles(
        listProfiles(dir).filter((file) => !before.has(file)),
        { relativeTo: options.outDir, fromUs: profiled.readyMonotonicUs },
      ),
      durableSteps: steps,
    };
  };

  /** `withVariants`: also the plain loop with `docker exec` and the durable harness without stack traces. */
  const measure = async (
    runs: OverheadRuns,
    withVariants = false,
  ): Promise<{
    point: OverheadPoint;
    plain: number[][];
    durable: number[][];
    plainDockerExec: number[][];
    durableTracesOff: number[][];
  }> => {
    useLatency(runs.latencyMs);
    await runPlain(2);
    if (withVariants) await runPlain(2, handsDockerExec);
    await runDurable(2);
    if (withVariants) await runDurable(2, tracesOffQueues);
    const plain: number[][] = [];
    const plainDockerExec: number[][] = [];
    const durable: number[][] = [];
    const durableTracesOff: number[][] = [];
    for (let run = 0; run < runs.runs; run++) {
      plain.push(await runPlain(runs.steps));
      if (withVariants) plainDockerExec.push(await runPlain(runs.steps, handsDockerExec));
      durable.push(await runDurable(runs.steps));
      if (withVariants) durableTracesOff.push(await runDurable(runs.steps, tracesOffQueues));
      ctx.log(`overhead: latency ${runs.latencyMs} ms, run ${run + 1}/${runs.runs} (${runs.steps} steps) done`);
    }
    return { point: overheadPoint(runs, plain, durable), plain, durable, plainDockerExec, durableTracesOff };
  };

  let stopped = false;
  try {
    const latency0 = await measure(profile.latency0, true);
    const latency200 = await measure(profile.latency200);
    const latency500 = await measure(profile.latency500);
    const workerMetrics = await scrapeWorkerMetrics(`http://${metricsAddress}/metrics`);
    const tracesOffMetricsRead = await scrapeWorkerMetrics(`http://${tracesOffMetrics}/metrics`);
    await worker.stop();
    await tracesOffWorker.stop();
    stopped = true;
    const timelineOf = async (id: string) =>
      stepTimeline((await ctx.client.workflow.getHandle(id).fetchHistory()).events ?? []);
    const timeline = await timelineOf(longest.id);
    const timeline200 = at200 ? await timelineOf(at200) : undefined;
    const profiled =
      !options.cpuProfileDir && profile.profiledSteps > 0 ? await profiledPass(profile.profiledSteps) : undefined;
    return {
      latency0: latency0.point,
      latency200: latency200.point,
      latency500: latency500.point,
      segments: overheadSegments(latency0.plain, latency0.durable),
      plainStep: plainStepOf(profile.latency0, latency0.plain, latency0.plainDockerExec),
      stackTracesOff: stackTracesOffOf(
        profile.latency0,
        { plain: latency0.plain, on: latency0.durable, off: latency0.durableTracesOff },
        { on: workerMetrics, off: tracesOffMetricsRead },
      ),
      worker: 'brain + hands workers in one worker process (bench/worker-process.ts), as `agent worker dev` runs them',
      timeline,
      ...(timeline200 ? { timeline200 } : {}),
      workerMetrics,
      ...(options.cpuProfileDir
        ? {
            cpuProfile: summarizeCpuProfiles(
              listProfiles(options.cpuProfileDir).filter((file) => !profilesBefore.has(file)),
              { relativeTo: options.outDir, fromUs: worker.readyMonotonicUs },
            ),
          }
        : profiled
          ? { cpuProfile: profiled }
          : {}),
    };
  } finally {
    if (!stopped) await Promise.all([worker.stop(), tracesOffWorker.stop()]);
    await ctx.removeSandboxes(sandboxes);
    for (const { commands } of [withExecutor, withDockerExec]) commands.close();
    await server.stop();
  }
}

function listProfiles(dir: string | undefined): string[] {
  if (!dir || !fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .map((name) => path.join(dir, name));
}

/** Arrival times of a run's model requests; checks the run took every step. */
function timesOf(server: ScriptedModelServer, marker: string, steps: number): number[] {
  const requests = requestsOf(server.requests, marker);
  if (requests.length !== steps + 1)
    throw new Error(`overhead: run ${marker} made ${requests.length} model requests, expected ${steps + 1}`);
  return requests.map((request) => request.receivedAt);
}

/** Every run's step times but its first (the container's creation). */
function steadySteps(runs: number[][]): number[] {
  return runs.flatMap((times) => gaps(times).slice(1));
}

/** Per-step figures from each run's request times (the first gap of a run is its container start). */
export function overheadPoint(runs: OverheadRuns, plainRuns: number[][], durableRuns: number[][]): OverheadPoint {
  const first = (all: number[][]) => median(all.map((times) => gaps(times)[0] ?? Number.NaN));
  const plain = steadySteps(plainRuns);
  const durable = steadySteps(durableRuns);
  const plainMedian = median(plain);
  const durableMedian = median(durable);
  return {
    latencyMs: runs.latencyMs,
    stepsPerRun: runs.steps,
    runs: runs.runs,
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

/** The plain loop's steady steps with the executor and with `docker exec`, side by side. */
export function plainStepOf(runs: OverheadRuns, executorRuns: number[][], dockerExecRuns: number[][]): PlainStep {
  const executor = steadySteps(executorRuns);
  const dockerExec = steadySteps(dockerExecRuns);
  return {
    stepsPerRun: runs.steps,
    runs: runs.runs,
    samples: Math.min(executor.length, dockerExec.length),
    executorMsPerStep: round(median(executor)),
    executorP95Ms: round(p95(executor)),
    dockerExecMsPerStep: round(median(dockerExec)),
    dockerExecP95Ms: round(p95(dockerExec)),
    gainMsPerStep: round(median(dockerExec) - median(executor)),
  };
}

/** The durable step with stack traces on (the default worker) and off, from the same alternating runs. */
export function stackTracesOffOf(
  runs: OverheadRuns,
  steps: { plain: number[][]; on: number[][]; off: number[][] },
  metrics: { on: WorkerMetrics; off: WorkerMetrics },
): StackTracesOff {
  const [onSteps, offSteps] = [steadySteps(steps.on), steadySteps(steps.off)];
  const on = median(onSteps);
  const off = median(offSteps);
  return {
    stepsPerRun: runs.steps,
    runs: runs.runs,
    samples: Math.min(onSteps.length, offSteps.length),
    onMsPerStep: round(on),
    offMsPerStep: round(off),
    savedMsPerStep: round(on - off),
    addedMsPerStep: round(off - median(steadySteps(steps.plain))),
    workflowTaskOnMs: round(metrics.on.workflowTaskExecutionMs, 2),
    workflowTaskOffMs: round(metrics.off.workflowTaskExecutionMs, 2),
  };
}

/** Medians per step range of the runs, for the ranges the runs reach. */
export function overheadSegments(plainRuns: number[][], durableRuns: number[][]): OverheadSegment[] {
  const steps = (all: number[][], from: number, to: number) =>
    all.flatMap((times) => gaps(times).slice(Math.max(1, from - 1), to));
  const longest = Math.min(...[...plainRuns, ...durableRuns].map((times) => times.length - 1));
  return SEGMENTS.filter(([from]) => from < longest).map(([from, to]) => {
    const plain = steps(plainRuns, from, to);
    const durable = steps(durableRuns, from, to);
    return {
      fromStep: from,
      toStep: Math.min(to, longest),
      samples: Math.min(plain.length, durable.length),
      plainMsPerStep: round(median(plain)),
      durableMsPerStep: round(median(durable)),
      addedMsPerStep: round(median(durable) - median(plain)),
    };
  });
}
