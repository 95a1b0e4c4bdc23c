/**
 * How big each scenario runs under each profile. `full` is the benchmark (`npm run bench`), `quick`
 * the same scenarios small enough for well under five minutes (`npm run bench -- --quick`), `smoke`
 * the tiniest variant, used by the test suite to check that the scenarios still run and report every
 * field.
 */
export type ProfileName = 'full' | 'quick' | 'smoke';

export interface BenchProfile {
  overhead: { steps: number; runs: number; latencies: readonly [0, 200] };
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
  ttft: { runs: number };
  concurrency: { operations: number; steps: number };
  recovery: {
    toolSleepSeconds: number;
    /** The operation's `heartbeatTimeoutMs` of the tuned variants. */
    heartbeatTimeoutMs: number;
    /** The worker's `stickyQueueScheduleToStartTimeout` of the last variant. */
    stickyQueueScheduleToStartTimeoutMs: number;
  };
  /**
   * `limit.historyCount.suggestContinueAsNew` for the bench's own dev server (null: the server's
   * default, 4,096 events). The quick profile lowers it so that its short history runs still
   * exercise continue-as-new.
   */
  suggestContinueAsNewEvents: number | null;
}

export const PROFILES: Record<ProfileName, BenchProfile> = {
  full: {
    overhead: { steps: 30, runs: 3, latencies: [0, 200] },
    history: { points: [10, 100, 500] },
    tokens: { turns: 200, minBytes: 20 * 1024, maxBytes: 200 * 1024, replyChars: 4000, sweepTurns: 60 },
    ttft: { runs: 15 },
    concurrency: { operations: 50, steps: 20 },
    recovery: { toolSleepSeconds: 4, heartbeatTimeoutMs: 5_000, stickyQueueScheduleToStartTimeoutMs: 1_000 },
    suggestContinueAsNewEvents: null,
  },
  quick: {
    overhead: { steps: 12, runs: 1, latencies: [0, 200] },
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
    ttft: { runs: 5 },
    concurrency: { operations: 10, steps: 5 },
    recovery: { toolSleepSeconds: 4, heartbeatTimeoutMs: 5_000, stickyQueueScheduleToStartTimeoutMs: 1_000 },
    suggestContinueAsNewEvents: 500,
  },
  smoke: {
    overhead: { steps: 3, runs: 1, latencies: [0, 200] },
    history: { points: [2, 4] },
    tokens: { turns: 2, minBytes: 20 * 1024, maxBytes: 40 * 1024, replyChars: 200, sweepTurns: 2 },
    ttft: { runs: 1 },
    concurrency: { operations: 2, steps: 2 },
    recovery: { toolSleepSeconds: 2, heartbeatTimeoutMs: 3_000, stickyQueueScheduleToStartTimeoutMs: 1_000 },
    suggestContinueAsNewEvents: null,
  },
};
