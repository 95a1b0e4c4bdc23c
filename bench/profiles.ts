/**
 * How big each scenario runs under each profile. `full` is the benchmark (`npm run bench`), `quick`
 * the same scenarios small enough for about six minutes (`npm run bench -- --quick`), `smoke`
 * the tiniest variant, used by the test suite to check that the scenarios still run and report every
 * field.
 */
import type { Toolchains } from '../common/environment';

export type ProfileName = 'full' | 'quick' | 'smoke';

/** One model latency of the overhead scenario: runs of so many steps, per mode. */
export interface OverheadRuns {
  latencyMs: number;
  steps: number;
  runs: number;
}

export interface BenchProfile {
  /** The three model latencies (0, 200 and 500 ms). Runs of at least 100 steps also give the per-segment figures. */
  overhead: {
    latency0: OverheadRuns;
    latency200: OverheadRuns;
    latency500: OverheadRuns;
    /**
     * Steps of a separate durable run at model latency 0 on a second worker with V8's CPU profiler on,
     * after the timed runs (so the profiler does not slow what is timed), for the report's step budget;
     * 0: none. `--profile` profiles the timed runs instead.
     */
    profiledSteps: number;
  };
  history: { points: number[] };
  tokens: {
    turns: number;
    minBytes: number;
    maxBytes: number;
    /** Characters of text the model writes each turn besides its tool call. */
    replyChars: number;
    /** The context window (default: the bench model's, `common/models.ts`). */
    windowTokens?: number;
    /** Turns of each editing-sweep run. */
    sweepTurns: number;
  };
  /**
   * Continue the work: features of the project (the first half done by one agent), bytes of each
   * feature's notes, characters of each reply, the window (default: the bench model's).
   */
  continue: { features: number; docBytes: number; replyChars: number; windowTokens?: number };
  ttft: { runs: number };
  concurrency: { operations: number; steps: number };
  /** The cluster scenario's load, run on the dev server and on the cluster. */
  cluster: { operations: number; steps: number };
  /**
   * Temporal's floor, one workflow at a time: runs of so many steps (its concurrent part runs the
   * concurrency scenario's operations × steps).
   */
  floor: { steps: number; runs: number };
  /**
   * Cold builds (each a new image: seconds to a minute with a toolchain, as fast as the Debian mirror), timed runs of each warm kind, and
   * the toolchains of the environment built (the smoke profile builds a setup command only).
   */
  environment: { coldRuns: number; warmRuns: number; toolchains: Toolchains };
  /**
   * `limit.historyCount.suggestContinueAsNew` for the bench's own dev server (null: the server's
   * default, 4,096 events). The quick profile lowers it so that its short history runs still
   * exercise continue-as-new.
   */
  suggestContinueAsNewEvents: number | null;
}

export const PROFILES: Record<ProfileName, BenchProfile> = {
  full: {
    overhead: {
      latency0: { latencyMs: 0, steps: 500, runs: 1 },
      latency200: { latencyMs: 200, steps: 100, runs: 2 },
      latency500: { latencyMs: 500, steps: 40, runs: 2 },
      profiledSteps: 100,
    },
    history: { points: [10, 100, 500] },
    tokens: { turns: 200, minBytes: 20 * 1024, maxBytes: 200 * 1024, replyChars: 4000, sweepTurns: 120 },
    continue: { features: 48, docBytes: 15_000, replyChars: 400 },
    ttft: { runs: 15 },
    concurrency: { operations: 200, steps: 20 },
    cluster: { operations: 100, steps: 10 },
    floor: { steps: 200, runs: 2 },
    environment: { coldRuns: 2, warmRuns: 15, toolchains: { python: '3.11' } },
    suggestContinueAsNewEvents: null,
  },
  quick: {
    overhead: {
      latency0: { latencyMs: 0, steps: 120, runs: 1 },
      latency200: { latencyMs: 200, steps: 25, runs: 1 },
      latency500: { latencyMs: 500, steps: 10, runs: 1 },
      profiledSteps: 0,
    },
    history: { points: [10, 40, 80] },
    tokens: {
      turns: 24,
      minBytes: 20 * 1024,
      maxBytes: 200 * 1024,
      replyChars: 4000,
      // A smaller window, so that 24 turns reach compaction and editing.
      windowTokens: 50_000,
      sweepTurns: 14,
    },
    // A smaller window, so that the resumed conversation does not fit it either.
    continue: { features: 8, docBytes: 15_000, replyChars: 400, windowTokens: 30_000 },
    ttft: { runs: 5 },
    concurrency: { operations: 20, steps: 5 },
    cluster: { operations: 20, steps: 5 },
    floor: { steps: 100, runs: 1 },
    environment: { coldRuns: 1, warmRuns: 5, toolchains: { python: '3.11' } },
    suggestContinueAsNewEvents: 500,
  },
  smoke: {
    overhead: {
      latency0: { latencyMs: 0, steps: 3, runs: 1 },
      latency200: { latencyMs: 200, steps: 3, runs: 1 },
      latency500: { latencyMs: 500, steps: 2, runs: 1 },
      profiledSteps: 2,
    },
    history: { points: [2, 4] },
    tokens: { turns: 2, minBytes: 20 * 1024, maxBytes: 40 * 1024, replyChars: 200, sweepTurns: 2 },
    continue: { features: 4, docBytes: 4_000, replyChars: 200, windowTokens: 7_000 },
    ttft: { runs: 1 },
    concurrency: { operations: 2, steps: 2 },
    cluster: { operations: 2, steps: 2 },
    floor: { steps: 3, runs: 1 },
    environment: { coldRuns: 1, warmRuns: 1, toolchains: {} },
    suggestContinueAsNewEvents: null,
  },
};
