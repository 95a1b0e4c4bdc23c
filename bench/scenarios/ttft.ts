/**
 * TTFT: submit (workflow start) → the first model request reaching the scripted server, for
 *  - noSandbox: an operation with no repository whose first turn needs no tool;
 *  - lazy: the default — the repository (`examples/calculator`) is seeded at the first tool call;
 *  - eager: `eagerSandbox: true` with the same repository — the workflow schedules the seeding
 *    (container creation + copy) in the same workflow task as the first model step.
 * Also submit → second model request (the first tool call's result is in), which is where eager
 * provisioning pays off, and whether `eagerSandbox` without a repository creates a container at all.
 * Kinds alternate (in an order rotated run by run); one warm-up run of each comes first and is not counted. The scripted
 * model answers after 1 s, as a real model would.
 */
import * as path from 'node:path';
import { operationResult } from '../../client/operation-result';
import type { OperationInput } from '../../common/operation';
import { PROJECT_ROOT } from '../../platform/paths';
import { goalOf, goalParam, markerText, requestsOf, stepsScript } from '../model';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { runId, startDurableHarness, type BenchContext, type DurableHarness } from '../context';
import type { BenchProfile } from '../profiles';
import type { TtftResult } from '../results';
import { median, round } from '../stats';
import { containerNameOf } from '../../common/sandbox-names';

const REPO = path.join(PROJECT_ROOT, 'examples', 'calculator');
type Kind = 'noSandbox' | 'lazy' | 'eager';
const KINDS: Kind[] = ['noSandbox', 'lazy', 'eager'];
/** Scripted model latency per answer, like a real model's time to first token (it does not enter TTFT, which ends at the request). */
const MODEL_LATENCY_MS = 1_000;
/** First-turn latency of the probe run: long enough to look for the container while the model "thinks". */
const PROBE_LATENCY_MS = 2_500;
/** Pause before each submit, so Docker's clean-up of the previous run's container does not fall into the next measurement. */
const SETTLE_MS = 500;

export async function runTtft(ctx: BenchContext, profile: BenchProfile['ttft']): Promise<TtftResult> {
  const steps = stepsScript({
    steps: (request) => goalParam(request, 'steps') ?? 0,
    call: () => ({ name: 'bash', input: { command: 'true' } }),
    latencyMs: MODEL_LATENCY_MS,
  });
  const server = await startScriptedModelServer({
    script: (request) => {
      const turn = steps(request);
      return goalParam(request, 'probe') && !request.body.messages.some((message) => message.role === 'assistant')
        ? { ...turn, latencyMs: PROBE_LATENCY_MS }
        : turn;
    },
  });
  const harness = await startDurableHarness(ctx, server.url, 'bench-ttft');
  try {
    for (const kind of KINDS) await measure(harness, server, kind);
    const samples: Record<Kind, { first: number; second: number }[]> = { noSandbox: [], lazy: [], eager: [] };
    for (let run = 0; run < profile.runs; run++) {
      // The order rotates run by run, so no kind always follows the same one.
      for (let i = 0; i < KINDS.length; i++) {
        const kind = KINDS[(i + run) % KINDS.length]!;
        samples[kind].push(await measure(harness, server, kind));
      }
      ctx.log(`ttft: run ${run + 1}/${profile.runs} done`);
    }
    const first = (kind: Kind) => samples[kind].map((sample) => sample.first);
    const second = (kind: Kind) => samples[kind].map((sample) => sample.second);
    const noSandboxMs = round(median(first('noSandbox')));
    const lazyMs = round(median(first('lazy')));
    return {
      runs: profile.runs,
      noSandboxMs,
      lazyMs,
      eagerMs: round(median(first('eager'))),
      lazyFirstToolRoundTripMs: round(median(second('lazy'))),
      eagerFirstToolRoundTripMs: round(median(second('eager'))),
      samples: { noSandbox: first('noSandbox'), lazy: first('lazy'), eager: first('eager') },
      eagerWithoutRepoProvisions: await probeEagerWithoutRepo(ctx, harness, server),
      ratio: round(lazyMs / noSandboxMs, 3),
    };
  } finally {
    await harness.close();
    await server.stop();
  }
}

async function measure(
  harness: DurableHarness,
  server: ScriptedModelServer,
  kind: Kind,
): Promise<{ first: number; second: number }> {
  const id = runId('ttft', kind.toLowerCase());
  const input: OperationInput = {
    goal: `${markerText(id)} steps=${kind === 'noSandbox' ? 0 : 1}: answer`,
    ...(kind === 'noSandbox' ? {} : { repo: { kind: 'local' as const, path: REPO } }),
    eagerSandbox: kind === 'eager',
  };
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const submitted = Date.now();
  const result = await operationResult(await harness.start(input, id));
  if (result.state !== 'completed') throw new Error(`ttft: ${kind} run ${id} ended ${result.state}: ${result.reason}`);
  const requests = requestsOf(server.requests, id);
  return { first: requests[0]!.receivedAt - submitted, second: (requests[1]?.receivedAt ?? Number.NaN) - submitted };
}

/** Starts `eagerSandbox: true` without a repository and looks for its container during the first model call. */
async function probeEagerWithoutRepo(
  ctx: BenchContext,
  harness: DurableHarness,
  server: ScriptedModelServer,
): Promise<boolean> {
  const id = runId('ttft', 'probe');
  const handle = await harness.start({ goal: `${markerText(id)} steps=1 probe=1: answer`, eagerSandbox: true }, id);
  const deadline = Date.now() + 30_000;
  while (!server.requests.some((request) => goalOf(request.body).includes(markerText(id)))) {
    if (Date.now() > deadline) throw new Error('ttft: the probe run made no model request');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await new Promise((resolve) => setTimeout(resolve, PROBE_LATENCY_MS * 0.8));
  const exists = await ctx.docker
    .getContainer(containerNameOf(id))
    .inspect()
    .then(
      () => true,
      () => false,
    );
  await operationResult(handle);
  return exists;
}
