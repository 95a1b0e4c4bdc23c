/**
 * The benchmark's results: the shape of `bench/results/latest.json` (a zod schema, so the run and the
 * smoke test can check that every field is there), and the targets each figure is judged against.
 *
 * Units: milliseconds (`…Ms`), bytes, tokens, US dollars (`costUsd`). Ratios and reductions are
 * fractions (0.8 = 80 %). Every scenario section is optional in the schema because `--only` runs a
 * subset; a full or quick run fills all six.
 *
 * Definitions used throughout:
 *  - step (overhead, history, concurrency): one model call plus the one cheap tool call it asks for.
 *  - ms per step: the gap between two consecutive model requests of one run as the scripted server
 *    received them, so the plain loop and the harness are timed by the same clock at the same point.
 *    The first gap of a run (it includes creating the container) is left out of the step figures.
 */
import { z } from 'zod';

const num = z.number();

export const overheadPointSchema = z.strictObject({
  /** Scripted model latency before each answer starts. */
  latencyMs: num,
  /** Steps timed per mode (runs × steady-state steps). */
  samples: num,
  /** Median ms per step of the plain in-process loop (same model client, same tool code). */
  plainMsPerStep: num,
  plainP95Ms: num,
  /** Median ms per step of the durable harness (operation workflow, brain + hands workers). */
  durableMsPerStep: num,
  durableP95Ms: num,
  /** durableMsPerStep − plainMsPerStep. */
  addedMsPerStep: num,
  /** durableMsPerStep / plainMsPerStep. */
  ratio: num,
  /** durableP95Ms − plainP95Ms. */
  p95AddedMs: num,
  /** Gap from the first model request to the second (container creation included), medians. */
  firstStepMs: z.strictObject({ plain: num, durable: num }),
});

export const historyPointSchema = z.strictObject({
  steps: num,
  /** Events over the whole run chain (continue-as-new followed). */
  events: num,
  /** Encoded protobuf size of every run's history, summed. */
  bytes: num,
  /** Runs in the chain (1 = no continue-as-new). */
  runs: num,
  /** Bytes of message content inside those payloads: goal, tool inputs and outputs, replies. */
  contentBytes: num,
  eventsPerStep: num,
  bytesPerStep: num,
  bytesPerStepExcludingContent: num,
  /** Bytes per step added between the previous point and this one (the marginal cost). */
  marginalBytesPerStep: num.nullable(),
  wallMs: num,
});

const firstLast = z.strictObject({ first: num, last: num });

export const tokenWaySchema = z.strictObject({
  /** Requests answered (model turns, and compaction calls where there are any). */
  requests: num,
  /** Prompt tokens neither read from nor written to the cache, summed over requests. */
  uncachedInput: num,
  cacheWrite: num,
  cacheRead: num,
  output: num,
  /** Largest prompt of one request (uncached + cache write + cache read). */
  peakContext: num,
  /** `peakContext` as a percentage of the model's context window (`tokens.windowTokens`). */
  peakContextPct: num,
  /** Cache reads / prompt tokens over all requests. */
  cacheHitRate: num,
  /** Answered requests whose prompt was over the window: a real model would have refused them (ways run without a window). */
  overWindowRequests: num,
  /** Requests the server refused with 400 (the harness way runs against the window). */
  rejectedRequests: num,
  compactions: num,
  editBatches: num,
  completed: z.boolean(),
  costUsd: num,
  wallMs: num,
});

export const editingSweepPointSchema = z.strictObject({
  name: z.string(),
  /** The operation's `context.editing` of this point (defaults fill the rest). */
  editing: z.record(z.string(), z.unknown()),
  turns: num,
  promptTokens: num,
  cacheWrite: num,
  cacheRead: num,
  uncachedInput: num,
  cacheHitRate: num,
  editBatches: num,
  compactions: num,
  peakContextPct: num,
  costUsd: num,
});

export const recoveryMeasurementSchema = z.strictObject({
  /** `defaults`, or the settings changed from them. */
  label: z.string(),
  /** The tool activity's heartbeat timeout (the operation's `heartbeatTimeoutMs`, else the preset's 30 s). */
  heartbeatTimeoutMs: num,
  /** The worker's sticky-queue schedule-to-start timeout (SDK default 10 s). */
  stickyQueueScheduleToStartTimeoutMs: num,
  /** SIGKILL of the worker during a tool call → the operation's next model request. */
  killToProgressMs: num,
  completed: z.boolean(),
  /** SIGKILL → the replacement worker polls. */
  killToReplacementReadyMs: num,
  /** SIGKILL → the interrupted tool activity completed (from the history). */
  killToToolCompletedMs: num,
  /** What the retried tool call returned: the journalled output, a synthetic "interrupted" result, or something else. */
  toolResult: z.enum(['recorded', 'interrupted', 'other']),
  toolAttempts: num,
});

export const resultsSchema = z.strictObject({
  /** 2: the tokens section has five ways, the window figures and the editing sweep. */
  schemaVersion: z.literal(2),
  profile: z.enum(['full', 'quick', 'smoke']),
  startedAt: z.string(),
  finishedAt: z.string(),
  wallMs: num,
  machine: z.strictObject({
    cpuModel: z.string(),
    cores: num,
    memoryGb: num,
    os: z.string(),
    node: z.string(),
    docker: z.string(),
    temporal: z.string(),
    /** 1-minute load average when the run started and ended (the machine may be shared). */
    loadAverage: z.strictObject({ start: num, end: num }),
  }),
  setup: z.strictObject({
    /** `dev-server (sqlite file)` when the bench started its own, else the address used. */
    temporal: z.string(),
    temporalAddress: z.string(),
    dynamicConfig: z.record(z.string(), z.unknown()),
    sandboxImage: z.string(),
    model: z.string(),
    scenarios: z.array(z.string()),
    parameters: z.record(z.string(), z.unknown()),
  }),
  overhead: z
    .strictObject({
      stepsPerRun: num,
      runs: num,
      latency0: overheadPointSchema,
      latency200: overheadPointSchema,
    })
    .optional(),
  history: z
    .strictObject({
      points: z.array(historyPointSchema),
      bytesPerStep: firstLast,
      bytesPerStepExcludingContent: firstLast,
      eventsPerStep: firstLast,
      /** The largest bytes-per-step-excluding-content of any point. */
      maxBytesPerStepExcludingContent: num,
      /** Where the bytes of the last point go: per event type, per step, largest first. */
      lastPointByEventType: z.array(z.strictObject({ eventType: z.string(), eventsPerStep: num, bytesPerStep: num })),
      /** Whether the server's continue-as-new suggestion was lowered for this run. */
      suggestContinueAsNewEvents: num.nullable(),
    })
    .optional(),
  tokens: z
    .strictObject({
      turns: num,
      /** The model's context window the figures are measured against. */
      windowTokens: num,
      /** Characters of text the model writes each turn besides its tool call. */
      replyChars: num,
      outputBytes: z.strictObject({ min: num, max: num, total: num }),
      naive: tokenWaySchema,
      cachedFullOutput: tokenWaySchema,
      spillOnly: tokenWaySchema,
      spillEditing: tokenWaySchema,
      /** Spill + editing + compaction: the harness's defaults, against the window. */
      harness: tokenWaySchema,
      /** harness.peakContextPct and harness.cacheHitRate, for the targets. */
      peakContextPct: num,
      cacheHitRate: num,
      /** 1 − harness.uncachedInput / naive.uncachedInput. */
      uncachedReduction: num,
      /** 1 − spillOnly prompt tokens / cachedFullOutput prompt tokens (prompt = uncached + write + read). */
      spillReduction: num,
      /** 1 − spillEditing prompt tokens / spillOnly prompt tokens. */
      editingReduction: num,
      /** 1 − harness.costUsd / other.costUsd. */
      costReduction: z.strictObject({ vsNaive: num, vsCachedFullOutput: num, vsSpillOnly: num }),
      /** Context-editing settings on a shorter run (compaction on, against the window): cache writes against tokens saved. */
      editingSweep: z.array(editingSweepPointSchema),
    })
    .optional(),
  ttft: z
    .strictObject({
      runs: num,
      /** Median submit → first model request, operation that needs no tool and has no repository. */
      noSandboxMs: num,
      /** Median, default lazy provisioning (repository seeded at the first tool call). */
      lazyMs: num,
      /** Median, `eagerSandbox: true` (seeding scheduled with the first model call). */
      eagerMs: num,
      /** Median submit → second model request (the first tool call's result is in): what eager buys. */
      lazyFirstToolRoundTripMs: num,
      eagerFirstToolRoundTripMs: num,
      samples: z.strictObject({ noSandbox: z.array(num), lazy: z.array(num), eager: z.array(num) }),
      /** Whether `eagerSandbox` without a repository creates the container before the first tool call. */
      eagerWithoutRepoProvisions: z.boolean(),
    })
    .optional(),
  concurrency: z
    .strictObject({
      operations: num,
      stepsPerOperation: num,
      completed: num,
      failed: num,
      wallMs: num,
      stepsPerSecond: num,
      /** VmHWM of the worker process (brain + hands in one child process). */
      workerPeakRssMb: num,
      /** Median and p95 time from submit to completion of one operation. */
      operationMs: z.strictObject({ median: num, p95: num }),
    })
    .optional(),
  recovery: recoveryMeasurementSchema
    .extend({
      /** Every measured configuration, the defaults first (their figures are also the section's own). */
      variants: z.array(recoveryMeasurementSchema),
    })
    .optional(),
  targets: z.array(
    z.strictObject({
      id: z.string(),
      description: z.string(),
      target: z.string(),
      measured: z.string(),
      verdict: z.enum(['pass', 'fail', 'not run']),
    }),
  ),
  notes: z.array(z.string()),
});

export type BenchResults = z.infer<typeof resultsSchema>;
export type OverheadResult = NonNullable<BenchResults['overhead']>;
export type OverheadPoint = z.infer<typeof overheadPointSchema>;
export type HistoryResult = NonNullable<BenchResults['history']>;
export type HistoryPoint = z.infer<typeof historyPointSchema>;
export type TokensResult = NonNullable<BenchResults['tokens']>;
export type TokenWay = z.infer<typeof tokenWaySchema>;
export type EditingSweepPoint = z.infer<typeof editingSweepPointSchema>;
export type TtftResult = NonNullable<BenchResults['ttft']>;
export type ConcurrencyResult = NonNullable<BenchResults['concurrency']>;
export type RecoveryResult = NonNullable<BenchResults['recovery']>;
export type RecoveryMeasurement = z.infer<typeof recoveryMeasurementSchema>;
export type TargetVerdict = BenchResults['targets'][number];

export const SCENARIOS = ['overhead', 'history', 'tokens', 'ttft', 'concurrency', 'recovery'] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/** Checks a results object; returns the problems (empty when valid). */
export function validateResults(value: unknown): string[] {
  const parsed = resultsSchema.safeParse(value);
  return parsed.success
    ? []
    : parsed.error.issues.map((issue) => `${issue.path.join('.') || '(top)'}: ${issue.message}`);
}

// ---- targets ----

/** Added ms per step at the median (each latency). */
export const TARGET_ADDED_MS = 50;
/** durable / plain at 200 ms model latency. */
export const TARGET_RATIO_200 = 1.25;
/** last bytes-per-step ≤ this × first. */
export const TARGET_HISTORY_FLAT = 1.25;
/** History bytes per step, message content excluded (4 KiB). */
export const TARGET_HISTORY_BYTES = 4096;
export const TARGET_UNCACHED_REDUCTION = 0.7;
/** The harness's largest prompt, as % of the window (the compaction threshold). */
export const TARGET_PEAK_CONTEXT_PCT = 70;
/** Cache reads / prompt tokens of the harness. */
export const TARGET_CACHE_HIT = 0.9;
/** lazy TTFT ≤ this × no-sandbox TTFT. */
export const TARGET_LAZY_TTFT = 1.1;
export const TARGET_RECOVERY_MS = 10_000;

const ms = (value: number): string => `${value.toFixed(1)} ms`;
const pct = (value: number): string => `${(value * 100).toFixed(1)} %`;

/** The verdict for every target, from whatever scenarios ran. */
export function evaluateTargets(results: Omit<BenchResults, 'targets' | 'notes'>): TargetVerdict[] {
  const rows: TargetVerdict[] = [];
  const add = (
    id: string,
    description: string,
    target: string,
    measured: string | undefined,
    pass: boolean | undefined,
  ) =>
    rows.push({
      id,
      description,
      target,
      measured: measured ?? '–',
      verdict: pass === undefined ? 'not run' : pass ? 'pass' : 'fail',
    });

  const o = results.overhead;
  add(
    'overhead-added-0',
    'added overhead per step, median, model latency 0 ms',
    `≤ ${TARGET_ADDED_MS} ms`,
    o && ms(o.latency0.addedMsPerStep),
    o && o.latency0.addedMsPerStep <= TARGET_ADDED_MS,
  );
  add(
    'overhead-added-200',
    'added overhead per step, median, model latency 200 ms',
    `≤ ${TARGET_ADDED_MS} ms`,
    o && ms(o.latency200.addedMsPerStep),
    o && o.latency200.addedMsPerStep <= TARGET_ADDED_MS,
  );
  add(
    'overhead-ratio-200',
    'durable / plain ms per step at 200 ms model latency',
    `≤ ${TARGET_RATIO_200}`,
    o && o.latency200.ratio.toFixed(3),
    o && o.latency200.ratio <= TARGET_RATIO_200,
  );

  const h = results.history;
  add(
    'history-flat',
    'history bytes per step stay flat (last point vs first)',
    `last ≤ ${TARGET_HISTORY_FLAT} × first`,
    h &&
      `${h.bytesPerStep.last.toFixed(0)} vs ${h.bytesPerStep.first.toFixed(0)} B (×${(h.bytesPerStep.last / h.bytesPerStep.first).toFixed(2)})`,
    h && h.bytesPerStep.last <= TARGET_HISTORY_FLAT * h.bytesPerStep.first,
  );
  add(
    'history-size',
    'history bytes per step excluding message content (largest point)',
    `≤ ${TARGET_HISTORY_BYTES} B (4 KiB)`,
    h && `${h.maxBytesPerStepExcludingContent.toFixed(0)} B`,
    h && h.maxBytesPerStepExcludingContent <= TARGET_HISTORY_BYTES,
  );

  const t = results.tokens;
  add(
    'tokens-uncached',
    'uncached input tokens, harness vs naive loop',
    `≥ ${pct(TARGET_UNCACHED_REDUCTION)} lower`,
    t && `${pct(t.uncachedReduction)} lower`,
    t && t.uncachedReduction >= TARGET_UNCACHED_REDUCTION,
  );
  add(
    'tokens-no-400',
    `the long-output run completes against the ${t ? t.windowTokens.toLocaleString('en-US') : ''}-token window with no 400`,
    'completed, 0 refused',
    t && `${t.harness.completed ? 'completed' : 'not completed'}, ${t.harness.rejectedRequests} refused`,
    t && t.harness.completed && t.harness.rejectedRequests === 0,
  );
  add(
    'tokens-peak-context',
    'largest prompt of the harness run, % of the context window',
    `≤ ${TARGET_PEAK_CONTEXT_PCT} %`,
    t && `${t.peakContextPct.toFixed(1)} %`,
    t && t.peakContextPct <= TARGET_PEAK_CONTEXT_PCT,
  );
  add(
    'tokens-cache-hit',
    'cache reads / prompt tokens of the harness run',
    `≥ ${pct(TARGET_CACHE_HIT)}`,
    t && pct(t.cacheHitRate),
    t && t.cacheHitRate >= TARGET_CACHE_HIT,
  );

  const f = results.ttft;
  add(
    'ttft-lazy',
    'time to first model request, lazy provisioning vs no sandbox',
    `≤ ${TARGET_LAZY_TTFT} × no-sandbox`,
    f && `${ms(f.lazyMs)} vs ${ms(f.noSandboxMs)} (×${(f.lazyMs / f.noSandboxMs).toFixed(2)})`,
    f && f.lazyMs <= TARGET_LAZY_TTFT * f.noSandboxMs,
  );

  const r = results.recovery;
  const recoveryRow = (id: string, description: string, m: RecoveryMeasurement | undefined) =>
    add(
      id,
      description,
      `≤ ${TARGET_RECOVERY_MS / 1000} s, completed`,
      m && `${(m.killToProgressMs / 1000).toFixed(1)} s, ${m.completed ? 'completed' : 'not completed'}`,
      m && m.killToProgressMs <= TARGET_RECOVERY_MS && m.completed,
    );
  recoveryRow(
    'recovery',
    'worker SIGKILLed during a tool call, default settings: kill → progress, and the run completes',
    r,
  );
  for (const variant of r?.variants.slice(1) ?? []) {
    recoveryRow(
      `recovery-${variant.label.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}`,
      `the same with ${variant.label}`,
      variant,
    );
  }

  const c = results.concurrency;
  add(
    'concurrency',
    `${c?.operations ?? 50} operations started at once on one worker process all complete`,
    'all completed',
    c && `${c.completed} of ${c.operations} completed`,
    c && c.completed === c.operations,
  );
  return rows;
}
