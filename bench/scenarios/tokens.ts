/**
 * Tokens: a long-output task — every turn runs a bash command printing 20–200 KB of generated log
 * text (sizes fixed per turn, the same in every way) — done three ways against the scripted server's
 * prompt-cache simulation:
 *  - naive: the plain loop, full outputs in the context, no cache breakpoints (`promptCache: false`);
 *  - cachedFullOutput: the plain loop, full outputs, the harness's cache breakpoints;
 *  - harness: the durable operation (outputs spilled to the workspace past 16 KiB, head and tail kept;
 *    cache breakpoints).
 * The server's answered usage (its request log) is the source of every token figure; cost comes from
 * `common/pricing.ts`. Each way gets a fresh server, so no way reads another's cache.
 */
import { createHandsActivities } from '../../activities/hands/activities';
import { SandboxManager } from '../../activities/hands/sandbox-manager';
import { createAnthropicClient } from '../../activities/model/client';
import { operationResult } from '../../client/operation-result';
import { costUsd } from '../../common/pricing';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { runId, startDurableHarness, type BenchContext } from '../context';
import { BENCH_MODEL, benchModelSettings, goalParam, markerText, requestsOf, stepsScript, usageOf } from '../model';
import { runPlainLoop } from '../plain-loop';
import type { BenchProfile } from '../profiles';
import type { TokensResult, TokenWay } from '../results';
import { round } from '../stats';

/** Output sizes per turn: spread over [min, max] by a fixed permutation, whole KiB. */
export function outputSizes(turns: number, minBytes: number, maxBytes: number): number[] {
  const span = Math.max(0, maxBytes - minBytes);
  return Array.from({ length: turns }, (_, turn) => {
    const spread = turns > 1 ? ((turn * 37) % turns) / (turns - 1) : 0;
    return Math.round((minBytes + spread * span) / 1024) * 1024;
  });
}

/** A deterministic command printing exactly `bytes` bytes of log-like lines. */
export function printCommand(bytes: number): string {
  const lines = Math.ceil(bytes / 40) + 1;
  return `seq -f 'log line %06g: the quick brown fox jumps over the lazy dog' 1 ${lines} | head -c ${bytes}`;
}

export async function runTokens(ctx: BenchContext, profile: BenchProfile['tokens']): Promise<TokensResult> {
  const sizes = outputSizes(profile.turns, profile.minBytes, profile.maxBytes);
  const script = stepsScript({
    steps: (request) => goalParam(request, 'steps') ?? 0,
    call: (turn) => ({ name: 'bash', input: { command: printCommand(sizes[turn] ?? profile.minBytes) } }),
  });
  const goal = (id: string) => `${markerText(id)} steps=${profile.turns}: print the logs one by one and look at them`;
  const manager = new SandboxManager({ docker: ctx.docker, image: ctx.image });
  // The plain loop keeps whole outputs: spilling is what the harness adds.
  const fullOutputHands = createHandsActivities({
    manager,
    spillThresholdBytes: 1 << 30,
    spillThresholdLines: 1 << 30,
  });

  const way = async (
    name: string,
    run: (server: ScriptedModelServer, id: string) => Promise<void>,
  ): Promise<TokenWay> => {
    const server = await startScriptedModelServer({ script });
    const id = runId('tokens', name);
    const started = Date.now();
    try {
      await run(server, id);
      const requests = requestsOf(server.requests, id);
      if (requests.length !== profile.turns + 1)
        throw new Error(`tokens: ${name} made ${requests.length} model requests, expected ${profile.turns + 1}`);
      const { usage, peakContext } = usageOf(requests);
      ctx.log(
        `tokens: ${name} done (${requests.length} requests, peak context ${peakContext} tokens, ${((Date.now() - started) / 1000).toFixed(1)} s)`,
      );
      return {
        requests: requests.length,
        uncachedInput: usage.input,
        cacheWrite: usage.cacheWrite,
        cacheRead: usage.cacheRead,
        output: usage.output,
        peakContext,
        costUsd: round(costUsd(usage, BENCH_MODEL), 4),
        wallMs: Date.now() - started,
      };
    } finally {
      await server.stop();
      await ctx.removeSandboxes([id]);
    }
  };

  const plain = (promptCache: false | undefined) => async (server: ScriptedModelServer, id: string) => {
    const settings = benchModelSettings(server.url);
    await runPlainLoop({
      client: createAnthropicClient(settings),
      settings,
      hands: fullOutputHands,
      sessionId: id,
      goal: goal(id),
      maxTurns: profile.turns + 1,
      ...(promptCache === false ? { promptCache } : {}),
    });
  };

  const naive = await way('naive', plain(false));
  const cachedFullOutput = await way('cached-full-output', plain(undefined));
  const harnessWay = await way('harness', async (server, id) => {
    const harness = await startDurableHarness(ctx, server.url, 'bench-tokens');
    try {
      const result = await operationResult(
        await harness.start({ goal: goal(id), budget: { maxTurns: profile.turns + 1 } }, id),
      );
      if (result.state !== 'completed') throw new Error(`tokens: harness run ended ${result.state}: ${result.reason}`);
    } finally {
      await harness.close();
    }
  });

  const prompt = (w: TokenWay) => w.uncachedInput + w.cacheWrite + w.cacheRead;
  return {
    turns: profile.turns,
    outputBytes: {
      min: Math.min(...sizes),
      max: Math.max(...sizes),
      total: sizes.reduce((sum, size) => sum + size, 0),
    },
    naive,
    cachedFullOutput,
    harness: harnessWay,
    uncachedReduction: round(1 - harnessWay.uncachedInput / naive.uncachedInput, 4),
    spillReduction: round(1 - prompt(harnessWay) / prompt(cachedFullOutput), 4),
    costReduction: {
      vsNaive: round(1 - harnessWay.costUsd / naive.costUsd, 4),
      vsCachedFullOutput: round(1 - harnessWay.costUsd / cachedFullOutput.costUsd, 4),
    },
  };
}
