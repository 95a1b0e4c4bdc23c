/**
 * Environments: what a workspace's environment costs an operation. Every run is an operation on
 * `examples/calculator` whose one tool call is `bash: true`; its workspace's environment is prepared
 * at that first tool call, so "start" is submit → the second model request (the tool's result is in).
 * The scripted model answers at once: the figures are the harness's own time, not diluted by a model's.
 *  - cold build: the environment is a realistic recipe that is not cached — the profile's toolchains
 *    (Python: apt installs python3 with pip, venv and headers, then a venv for the agent) and a setup
 *    command writing the run's own id into the image, so its content hash is new every run. Timed:
 *    the `prepareEnvironment` activity (history), the builder's own time, the start, and each build
 *    step from the operation's live progress events.
 *  - warm start: the same recipe with a fixed marker (its image built once, by the warm-up, unless it
 *    exists) against `environment: "default"`, kinds alternating (in an order rotated run by run)
 *    after one warm-up of each, medians; with each kind's `prepareEnvironment` time.
 * Images this scenario built are removed at the end: the cold ones, and the warm one when its warm-up
 * built it (the machine is left with the images it had).
 */
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { liveEvents } from '../../client/live';
import { operationResult } from '../../client/operation-result';
import type { EnvironmentActivities, EnvironmentInput, PreparedEnvironment } from '../../common/environment';
import type { OperationInput } from '../../common/operation';
import { PROJECT_ROOT } from '../../platform/paths';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { runId, startDurableHarness, type BenchContext, type DurableHarness } from '../context';
import { markerText, requestsOf, stepsScript } from '../model';
import type { BenchProfile } from '../profiles';
import type { BuildStepTime, EnvironmentResult } from '../results';
import { median, round } from '../stats';

const REPO = path.join(PROJECT_ROOT, 'examples', 'calculator');
const MARKER_FILE = '/etc/agent-bench-marker';
const PREPARE_ACTIVITY: keyof EnvironmentActivities = 'prepareEnvironment';
type Kind = 'warm' | 'default';
const KINDS: Kind[] = ['warm', 'default'];
/** Pause before each submit, so Docker's clean-up of the previous run's container does not fall into the next measurement. */
const SETTLE_MS = 500;

interface Sample {
  /** Submit → second model request. */
  startMs: number;
  /** The `prepareEnvironment` activity, scheduled → completed, and when it was scheduled and completed (server time). */
  prepareMs: number;
  prepare: { scheduledAt: number; completedAt: number };
  environment: PreparedEnvironment;
  /** Build progress lines as they arrived (cold runs only). */
  progress: { line: string; at: number }[];
}

export async function runEnvironment(
  ctx: BenchContext,
  profile: BenchProfile['environment'],
): Promise<EnvironmentResult> {
  const server = await startScriptedModelServer({
    script: stepsScript({ steps: () => 1, call: () => ({ name: 'bash', input: { command: 'true' } }) }),
  });
  const harness = await startDurableHarness(ctx, server.url, 'bench-env');
  const spec = (marker: string): EnvironmentInput => ({
    toolchains: profile.toolchains,
    setup: [`echo ${marker} > ${MARKER_FILE}`],
  });
  const builtImages: string[] = [];
  try {
    const colds: Sample[] = [];
    for (let run = 0; run < profile.coldRuns; run++) {
      const id = runId('env', 'cold');
      const sample = await measure(ctx, harness, server, id, spec(id), true);
      if (!sample.environment.built)
        throw new Error(`environment: the cold run ${id} reused ${sample.environment.image} instead of building it`);
      builtImages.push(sample.environment.image);
      colds.push(sample);
      ctx.log(`environment: cold build ${run + 1}/${profile.coldRuns} in ${(sample.prepareMs / 1000).toFixed(1)} s`);
    }
    const warmSpec = spec('warm');
    const inputOf = (kind: Kind): EnvironmentInput => (kind === 'warm' ? warmSpec : 'default');
    // The warm-up: builds the warm image unless it exists (then every warm run reuses it).
    const warmUp = await measure(ctx, harness, server, runId('env', 'warmup'), warmSpec, false);
    if (warmUp.environment.built) builtImages.push(warmUp.environment.image);
    await measure(ctx, harness, server, runId('env', 'warmup'), 'default', false);
    const samples: Record<Kind, Sample[]> = { warm: [], default: [] };
    for (let run = 0; run < profile.warmRuns; run++) {
      for (let i = 0; i < KINDS.length; i++) {
        const kind = KINDS[(i + run) % KINDS.length]!;
        const sample = await measure(ctx, harness, server, runId('env', kind), inputOf(kind), false);
        checkKind(kind, sample.environment, warmUp.environment.image);
        samples[kind].push(sample);
      }
      ctx.log(`environment: warm run ${run + 1}/${profile.warmRuns} done`);
    }
    const first = colds[0]!;
    const start = (kind: Kind) => median(samples[kind].map((sample) => sample.startMs));
    const prepare = (kind: Kind) => round(median(samples[kind].map((sample) => sample.prepareMs)));
    return {
      spec: { toolchains: profile.toolchains, setup: [`echo <run id> > ${MARKER_FILE}`] },
      modelLatencyMs: 0,
      coldRuns: profile.coldRuns,
      coldBuildMs: round(median(colds.map((sample) => sample.prepareMs))),
      coldBuilderMs: round(median(colds.map((sample) => sample.environment.buildMs ?? Number.NaN))),
      coldStartMs: round(median(colds.map((sample) => sample.startMs))),
      coldSamples: colds.map((sample) => sample.prepareMs),
      coldBuildSteps: buildStepTimes(first.progress, first.prepare.completedAt),
      coldBuildLeadMs: Math.max(0, (first.progress[0]?.at ?? Number.NaN) - first.prepare.scheduledAt),
      coldImageBytes: await imageBytes(ctx, first.environment.image),
      defaultImageBytes: await imageBytes(ctx, ctx.image),
      warmRuns: profile.warmRuns,
      warmImage: warmUp.environment.image,
      warmImageBuiltByRun: warmUp.environment.built,
      warmStartMs: round(start('warm')),
      defaultStartMs: round(start('default')),
      warmStartRatio: round(start('warm') / start('default'), 3),
      samples: {
        warm: samples.warm.map((sample) => sample.startMs),
        default: samples.default.map((sample) => sample.startMs),
      },
      prepareMs: { warm: prepare('warm'), default: prepare('default') },
    };
  } finally {
    await harness.close();
    await server.stop();
    // After the workspaces that ran them are gone.
    for (const image of builtImages)
      await ctx.docker
        .getImage(image)
        .remove()
        .catch((err: Error) => ctx.log(`environment: could not remove ${image}: ${err.message}`));
  }
}

/** One operation: submit, wait for its result, and read its start, environment and preparation time. */
async function measure(
  ctx: BenchContext,
  harness: DurableHarness,
  server: ScriptedModelServer,
  id: string,
  environment: EnvironmentInput,
  followBuild: boolean,
): Promise<Sample> {
  const input: OperationInput = {
    goal: `${markerText(id)} run one command`,
    repo: { kind: 'local', path: REPO },
    environment,
  };
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const submitted = Date.now();
  const handle = await harness.start(input, id);
  const progress = followBuild ? buildProgress(ctx.client, id) : Promise.resolve([]);
  const result = await operationResult(handle);
  if (result.state !== 'completed') throw new Error(`environment: run ${id} ended ${result.state}: ${result.reason}`);
  if (!result.environment) throw new Error(`environment: run ${id} reports no environment`);
  const requests = requestsOf(server.requests, id);
  if (requests.length < 2) throw new Error(`environment: run ${id} made ${requests.length} model request(s), not 2`);
  const prepared = await preparation(ctx.client, id);
  return {
    startMs: requests[1]!.receivedAt - submitted,
    prepareMs: prepared.completedAt - prepared.scheduledAt,
    prepare: prepared,
    environment: result.environment,
    progress: await progress,
  };
}

/** The warm runs reuse the warm image; the default runs build nothing. */
function checkKind(kind: Kind, environment: PreparedEnvironment, warmImage: string): void {
  if (kind === 'warm' && (environment.built || environment.image !== warmImage))
    throw new Error(
      `environment: a warm run ${environment.built ? 'built' : 'ran'} ${environment.image}, not the cached ${warmImage}`,
    );
  if (kind === 'default' && environment.hash !== '')
    throw new Error(`environment: a default run got the environment image ${environment.image}`);
}

/** The operation's build progress lines as they arrive, until it ends. */
async function buildProgress(client: Client, operationId: string): Promise<{ line: string; at: number }[]> {
  const seen: { line: string; at: number }[] = [];
  for await (const event of liveEvents(client, operationId))
    if (event.kind === 'environment.progress') seen.push({ line: event.line, at: Date.now() });
  return seen;
}

/** The `prepareEnvironment` activity in the operation's history: scheduled → completed. */
async function preparation(client: Client, workflowId: string): Promise<Sample['prepare']> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const scheduled = events.find(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === PREPARE_ACTIVITY,
  );
  const completed = events.find(
    (event) =>
      scheduled &&
      String(event.activityTaskCompletedEventAttributes?.scheduledEventId ?? '') === String(scheduled.eventId),
  );
  if (!scheduled?.eventTime || !completed?.eventTime)
    throw new Error(`environment: run ${workflowId} has no completed ${PREPARE_ACTIVITY} in its history`);
  return { scheduledAt: tsToMs(scheduled.eventTime), completedAt: tsToMs(completed.eventTime) };
}

/**
 * Each build step's time from its progress lines (`building environment <hash>: step 2/5 <title>`):
 * from its first line's arrival to the next step's, the last step to `endAt`.
 */
export function buildStepTimes(progress: readonly { line: string; at: number }[], endAt: number): BuildStepTime[] {
  const starts = new Map<number, { title: string; at: number }>();
  for (const { line, at } of progress) {
    const match = /: step (\d+)\/\d+ (.*)$/.exec(line);
    if (match && !starts.has(Number(match[1]))) starts.set(Number(match[1]), { title: match[2]!, at });
  }
  const ordered = [...starts.entries()].sort(([a], [b]) => a - b);
  return ordered.map(([step, { title, at }], index) => ({
    step,
    title,
    ms: Math.max(0, Math.round((ordered[index + 1]?.[1].at ?? endAt) - at)),
  }));
}

async function imageBytes(ctx: BenchContext, image: string): Promise<number> {
  return (await ctx.docker.getImage(image).inspect()).Size;
}
