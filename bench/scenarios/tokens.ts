/**
 * Tokens: a long-output task — every turn the model writes a paragraph and runs a bash command
 * printing 20–200 KB of generated log text (sizes fixed per turn, the same in every way) — done five
 * ways against the scripted server's prompt-cache simulation:
 *  - naive: the plain loop, full outputs in the context, no cache breakpoints (`promptCache: false`);
 *  - cachedFullOutput: the plain loop, full outputs, the harness's cache breakpoints;
 *  - spillOnly: the durable operation with context editing and compaction off (outputs spilled to
 *    the workspace past 16 KiB, head and tail kept; cache breakpoints);
 *  - spillEditing: the same with context editing (old tool results cleared in batches);
 *  - harness: the operation as configured by default — spill, editing and compaction — against a
 *    server that enforces the model's context window (a prompt over it gets the API's 400).
 * The first four run without a window, to show what the run would cost if it could run at all
 * (`overWindowRequests` counts the requests a real model would have refused).
 *
 * Then the editing sweep: the same task, shorter, run as the harness runs it (compaction on, against
 * the window) with several editing settings — off, every turn, early and late batches, and at the
 * compaction's own threshold (a batch where it keeps the context under it, else the compaction) — to weigh
 * the cache each clear batch rewrites against the prompt tokens it saves and the compactions it
 * spares (the defaults in `common/context.ts` are picked from it).
 *
 * The server's answered usage (its request log) is the source of every token figure; cost comes from
 * `common/pricing.ts`. Each way gets a fresh server, so no way reads another's cache.
 */
import { createHandsActivities } from '../../activities/hands/activities';
import { createSandboxes } from '../../activities/hands/sandboxes';
import { ensureSandboxTools } from '../../platform/sandbox-tools';
import { createAnthropicClient } from '../../activities/model/client';
import { operationResult } from '../../client/operation-result';
import { recordedStepsOf } from '../../client/token-report';
import type { RecordedStep } from '../../common/recorded-steps';
import { COMPACTION_REQUEST_MARKER, type ContextPolicyInput } from '../../common/context';
import { contextWindowOf } from '../../common/models';
import { costUsd } from '../../common/pricing';
import type { ScriptedRequest, ScriptedTurn } from '../../scripted-model/script';
import { startScriptedModelServer, type RecordedRequest } from '../../scripted-model/server';
import { runId, startDurableHarness, type BenchContext } from '../context';
import { BENCH_MODEL, benchModelSettings, markerText, usageOf } from '../model';
import { runPlainLoop } from '../plain-loop';
import type { BenchProfile } from '../profiles';
import { cacheWriteCauses, cacheWriteRows } from '../cache-writes';
import type { CacheWriteRow, EditingSweepPoint, TokensResult, TokenWay } from '../results';
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

/** The model's paragraph of a turn: `chars` characters of plausible prose, different every turn. */
export function replyText(turn: number, chars: number): string {
  const sentence = `Turn ${turn}: the previous output shows the log lines as expected, so the next command prints the following part. `;
  return sentence.repeat(Math.ceil(chars / sentence.length)).slice(0, chars);
}

/**
 * The task's script for one server: turn k runs `printCommand(sizes[k])` after a paragraph; then a
 * final answer. Summary calls get a summary. Counts the turns it answered, so it is the same task
 * whether or not the context was compacted in between.
 */
export function tokensScript(sizes: readonly number[], replyChars: number): (request: ScriptedRequest) => ScriptedTurn {
  let turn = 0;
  return (request) => {
    if (request.lastUserText.includes(COMPACTION_REQUEST_MARKER)) {
      return {
        text: `## Goal\nPrint the logs one by one and look at them.\n## Progress\n${turn} of ${sizes.length} logs printed; every one looked as expected. The full outputs are under /workspace/.agent/out/.\n## Next step\nPrint log ${turn + 1}.`,
      };
    }
    if (turn >= sizes.length) return { text: `done after ${turn} steps` };
    const bytes = sizes[turn]!;
    turn += 1;
    return {
      text: replyText(turn, replyChars),
      toolCalls: [{ name: 'bash', input: { command: printCommand(bytes) } }],
    };
  };
}

interface WayFigures {
  requests: RecordedRequest[];
  completed: boolean;
  compactions: number;
  editBatches: number;
  /** The operation's recorded steps (the durable ways), to label the requests. */
  steps?: RecordedStep[];
}

/** A way's figures, and its requests one row each. */
type MeasuredWay = TokenWay & { rows: CacheWriteRow[] };

function wayOf(figures: WayFigures, windowTokens: number, wallMs: number): MeasuredWay {
  const answered = figures.requests.filter((r) => r.status === 200 && r.usage);
  const rows = cacheWriteRows(figures.requests, figures.steps);
  const { usage, peakContext } = usageOf(answered);
  const prompt = usage.input + usage.cacheWrite + usage.cacheRead;
  return {
    requests: answered.length,
    uncachedInput: usage.input,
    cacheWrite: usage.cacheWrite,
    cacheRead: usage.cacheRead,
    output: usage.output,
    peakContext,
    peakContextPct: round((100 * peakContext) / windowTokens, 2),
    cacheHitRate: round(prompt > 0 ? usage.cacheRead / prompt : 0, 4),
    overWindowRequests: answered.filter((r) => promptOf(r) > windowTokens).length,
    rejectedRequests: figures.requests.filter((r) => r.status === 400).length,
    compactions: figures.compactions,
    editBatches: figures.editBatches,
    completed: figures.completed,
    costUsd: round(costUsd(usage, BENCH_MODEL), 4),
    wallMs,
    notRead: cacheWriteCauses(rows),
    rows,
  };
}

/** The way without its request rows (only the harness way's are kept in the results). */
const withoutRows = ({ rows: _rows, ...way }: MeasuredWay): TokenWay => way;

const promptOf = (r: RecordedRequest): number =>
  r.usage ? r.usage.input_tokens + r.usage.cache_creation_input_tokens + r.usage.cache_read_input_tokens : 0;

export async function runTokens(ctx: BenchContext, profile: BenchProfile['tokens']): Promise<TokensResult> {
  const windowTokens = profile.windowTokens ?? contextWindowOf(BENCH_MODEL);
  const sandboxes = createSandboxes({ docker: ctx.docker, image: ctx.image, sandboxTools: ensureSandboxTools().path });
  // The plain loop keeps whole outputs: spilling is what the harness adds.
  const fullOutputHands = createHandsActivities({
    sandboxes,
    spillThresholdBytes: 1 << 30,
    spillThresholdLines: 1 << 30,
  });
  const goal = (id: string, turns: number) =>
    `${markerText(id)} steps=${turns}: print the logs one by one and look at them`;

  const way = async (
    name: string,
    turns: number,
    run: (url: string, id: string, sizes: number[]) => Promise<Omit<WayFigures, 'requests'>>,
    enforceWindow = false,
  ): Promise<MeasuredWay> => {
    const sizes = outputSizes(turns, profile.minBytes, profile.maxBytes);
    const server = await startScriptedModelServer({
      script: tokensScript(sizes, profile.replyChars),
      recordBodies: false,
      ...(enforceWindow ? { contextWindowTokens: windowTokens } : {}),
    });
    const id = runId('tokens', name);
    const started = Date.now();
    try {
      const figures = { ...(await run(server.url, id, sizes)), requests: server.requests };
      const result = wayOf(figures, windowTokens, Date.now() - started);
      ctx.log(
        `tokens: ${name} done (${result.requests} requests, peak context ${result.peakContext} tokens = ${result.peakContextPct}% of ${windowTokens}, ` +
          `cache hit ${(100 * result.cacheHitRate).toFixed(1)}%, ${result.compactions} compactions, ${result.editBatches} clear batches, ${(result.wallMs / 1000).toFixed(1)} s)`,
      );
      return result;
    } finally {
      await server.stop();
      await ctx.removeSandboxes([id]);
    }
  };

  const plain =
    (promptCache: false | undefined) =>
    async (url: string, id: string, sizes: number[]): Promise<Omit<WayFigures, 'requests'>> => {
      const settings = benchModelSettings(url);
      await runPlainLoop({
        client: createAnthropicClient(settings),
        settings,
        hands: fullOutputHands,
        sessionId: id,
        goal: goal(id, sizes.length),
        maxTurns: sizes.length + 1,
        ...(promptCache === false ? { promptCache } : {}),
      });
      return { completed: true, compactions: 0, editBatches: 0 };
    };

  const durable =
    (context: ContextPolicyInput) =>
    async (url: string, id: string, sizes: number[]): Promise<Omit<WayFigures, 'requests'>> => {
      const harness = await startDurableHarness(ctx, url, 'bench-tokens');
      try {
        const result = await operationResult(
          await harness.start(
            {
              goal: goal(id, sizes.length),
              budget: { maxTurns: sizes.length + 5 },
              context: { windowTokens, ...context },
            },
            id,
          ),
        );
        if (result.state !== 'completed')
          throw new Error(`tokens: harness run ended ${result.state}: ${result.reason}`);
        return {
          completed: true,
          compactions: result.tokens.compactions,
          editBatches: result.tokens.editBatches,
          steps: await recordedStepsOf(ctx.client, id),
        };
      } finally {
        await harness.close();
      }
    };

  const naive = await way('naive', profile.turns, plain(false));
  const cachedFullOutput = await way('cached-full-output', profile.turns, plain(undefined));
  const spillOnly = await way('spill-only', profile.turns, durable({ editing: { enabled: false }, compaction: false }));
  const spillEditing = await way('spill-editing', profile.turns, durable({ compaction: false }));
  const harness = await way('harness', profile.turns, durable({}), true);
  const editingSweep = await runEditingSweep(profile, windowTokens, (name, context) =>
    way(`sweep-${name.split(' ')[0]}`, profile.sweepTurns, durable(context), true),
  );

  const sizes = outputSizes(profile.turns, profile.minBytes, profile.maxBytes);
  const prompt = (w: TokenWay) => w.uncachedInput + w.cacheWrite + w.cacheRead;
  const reduction = (a: number, b: number) => round(b > 0 ? 1 - a / b : 0, 4);
  return {
    turns: profile.turns,
    windowTokens,
    replyChars: profile.replyChars,
    outputBytes: {
      min: Math.min(...sizes),
      max: Math.max(...sizes),
      total: sizes.reduce((sum, size) => sum + size, 0),
    },
    naive: withoutRows(naive),
    cachedFullOutput: withoutRows(cachedFullOutput),
    spillOnly: withoutRows(spillOnly),
    spillEditing: withoutRows(spillEditing),
    harness: withoutRows(harness),
    harnessRequests: harness.rows,
    peakContextPct: harness.peakContextPct,
    cacheHitRate: harness.cacheHitRate,
    uncachedReduction: reduction(harness.uncachedInput, naive.uncachedInput),
    spillReduction: reduction(prompt(spillOnly), prompt(cachedFullOutput)),
    editingReduction: reduction(prompt(spillEditing), prompt(spillOnly)),
    costReduction: {
      vsNaive: reduction(harness.costUsd, naive.costUsd),
      vsCachedFullOutput: reduction(harness.costUsd, cachedFullOutput.costUsd),
      vsSpillOnly: reduction(harness.costUsd, spillOnly.costUsd),
    },
    editingSweep,
  };
}

/**
 * The editing settings the sweep compares, on `profile.sweepTurns` turns with compaction on.
 * `minClearPct` is `minClearTokens` as a percentage of the window.
 */
export const EDITING_SWEEP: ReadonlyArray<{ name: string; atPct?: number; keepTurns?: number; minClearPct?: number }> =
  [
    { name: 'off (compaction only)' },
    { name: 'every turn', atPct: 10, keepTurns: 1, minClearPct: 0 },
    { name: 'early', atPct: 30, keepTurns: 4, minClearPct: 5 },
    { name: 'late', atPct: 55, keepTurns: 4, minClearPct: 15 },
    { name: 'before compaction (default)', atPct: 65, keepTurns: 4, minClearPct: 25 },
    { name: 'at the compaction threshold', atPct: 70, keepTurns: 4, minClearPct: 25 },
  ];

async function runEditingSweep(
  profile: BenchProfile['tokens'],
  windowTokens: number,
  run: (name: string, context: ContextPolicyInput) => Promise<TokenWay>,
): Promise<EditingSweepPoint[]> {
  const points: EditingSweepPoint[] = [];
  for (const setting of EDITING_SWEEP) {
    const editing: NonNullable<ContextPolicyInput['editing']> =
      setting.atPct === undefined
        ? { enabled: false }
        : {
            atPct: setting.atPct,
            keepTurns: setting.keepTurns,
            minClearTokens: Math.round(((setting.minClearPct ?? 0) / 100) * windowTokens),
          };
    const w = await run(setting.name, { editing });
    points.push({
      name: setting.name,
      editing: { ...editing },
      turns: profile.sweepTurns,
      promptTokens: w.uncachedInput + w.cacheWrite + w.cacheRead,
      cacheWrite: w.cacheWrite,
      cacheRead: w.cacheRead,
      uncachedInput: w.uncachedInput,
      cacheHitRate: w.cacheHitRate,
      editBatches: w.editBatches,
      compactions: w.compactions,
      peakContextPct: w.peakContextPct,
      costUsd: w.costUsd,
      notRead: w.notRead,
    });
  }
  return points;
}
