/**
 * The token ledger of an operation and the token-economy figures derived from it.
 *
 * The operation's `usage` (every request's four billing classes, failed attempts and compaction
 * calls included) is the money; the ledger beside it says what the context techniques did:
 *  - requests answered, steps that finally failed, the largest prompt;
 *  - compaction calls (their usage is part of the operation's) and the tokens each removed;
 *  - context-editing batches and the cache writes of the requests that carried them;
 *  - prompt tokens *avoided*, per technique: for every model request, what the context would also
 *    have carried without output spill (full outputs), without cleared tool results, and without
 *    the compactions so far. A first-order estimate (character counts / 4, `models.ts`): each
 *    avoided token is counted once per request that did not carry it, and a result a later
 *    technique removed (cleared, compacted away) stops counting for the earlier one, so nothing is
 *    counted twice.
 *
 * The workflow updates it as steps complete (`workflows/operation/context-window.ts`); the operation's status
 * and result carry `tokenEconomy(...)` of it; `agent report` prints that beside the per-step usage it
 * reads from the history. Deterministic and pure (imported by workflow code).
 */
import { addUsage, promptTokens, ZERO_USAGE, type TokenUsage } from './model-types';
import { CACHE_READ_MULTIPLIER, CACHE_WRITE_MULTIPLIER, costUsd, priceOf, promptInputEquivalent } from './pricing';

export interface AvoidedTokens {
  /** Tool output kept out of the context by spilling it to the workspace (head and tail kept). */
  spill: number;
  /** Tool results replaced by stubs (context editing). */
  editing: number;
  /** Turns replaced by a summary (compaction). */
  compaction: number;
}

export interface TokenLedger {
  /** Requests answered: model steps and compaction calls (failed attempts are in the usage, not here). */
  requests: number;
  /** Model or compaction steps that finally failed (their attempts' usage is in the operation's usage). */
  failedSteps: number;
  /** Prompt tokens (uncached + cache write + cache read) of the largest answered request. */
  peakPromptTokens: number;
  compaction: {
    count: number;
    /** The compaction calls' usage (part of the operation's usage). */
    usage: TokenUsage;
    /** Estimated context tokens the compactions removed (before − after, summed). */
    tokensRemoved: number;
    /** Cache writes of the first request after each compaction (the new prefix is written once). */
    cacheWriteAfter: number;
  };
  editing: {
    batches: number;
    clearedResults: number;
    /** Estimated tokens the stubs removed (result − stub, summed). */
    tokensRemoved: number;
    /** Cache writes of the requests that carried a batch (the prefix after the first cleared result is written again). */
    cacheWriteAtBatches: number;
  };
  /** Prompt tokens avoided, summed over model requests. */
  avoided: AvoidedTokens;
  /** What each technique keeps out of the context right now: the per-request terms of `avoided`. */
  inContext: AvoidedTokens;
}

export function newTokenLedger(): TokenLedger {
  return {
    requests: 0,
    failedSteps: 0,
    peakPromptTokens: 0,
    compaction: { count: 0, usage: { ...ZERO_USAGE }, tokensRemoved: 0, cacheWriteAfter: 0 },
    editing: { batches: 0, clearedResults: 0, tokensRemoved: 0, cacheWriteAtBatches: 0 },
    avoided: { spill: 0, editing: 0, compaction: 0 },
    inContext: { spill: 0, editing: 0, compaction: 0 },
  };
}

/** An answered model request: counts it, its peak, and what each technique kept out of it. */
export function ledgerModelRequest(
  ledger: TokenLedger,
  usage: TokenUsage,
  carried: { batch: boolean; firstAfterCompaction: boolean },
): void {
  ledger.requests += 1;
  ledger.peakPromptTokens = Math.max(ledger.peakPromptTokens, promptTokens(usage));
  if (carried.batch) ledger.editing.cacheWriteAtBatches += usage.cacheWrite;
  if (carried.firstAfterCompaction) ledger.compaction.cacheWriteAfter += usage.cacheWrite;
  for (const technique of ['spill', 'editing', 'compaction'] as const) {
    ledger.avoided[technique] += ledger.inContext[technique];
  }
}

/** An answered compaction call and what it removed from the context. */
export function ledgerCompaction(
  ledger: TokenLedger,
  call: { usage: TokenUsage; failedAttemptsUsage?: TokenUsage; tokensBefore: number; tokensAfter: number },
  dropped: { spillExtra: number; clearedTokens: number },
): void {
  ledger.requests += 1;
  ledger.peakPromptTokens = Math.max(ledger.peakPromptTokens, promptTokens(call.usage));
  ledger.compaction.count += 1;
  ledger.compaction.usage = addUsage(
    ledger.compaction.usage,
    addUsage(call.usage, call.failedAttemptsUsage ?? ZERO_USAGE),
  );
  const removed = Math.max(0, call.tokensBefore - call.tokensAfter);
  ledger.compaction.tokensRemoved += removed;
  ledger.inContext.compaction += removed;
  ledger.inContext.spill = Math.max(0, ledger.inContext.spill - dropped.spillExtra);
  ledger.inContext.editing = Math.max(0, ledger.inContext.editing - dropped.clearedTokens);
}

/** A compaction call that finally failed: its attempts' usage still belongs to compaction. */
export function ledgerFailedStep(ledger: TokenLedger, usage: TokenUsage, kind: 'model' | 'compaction'): void {
  ledger.failedSteps += 1;
  if (kind === 'compaction') ledger.compaction.usage = addUsage(ledger.compaction.usage, usage);
}

/** A tool result entered the context; `spillExtra` is what its full output would have added. */
export function ledgerToolResult(ledger: TokenLedger, spillExtra: number): void {
  ledger.inContext.spill += spillExtra;
}

/** A batch of tool results was cleared: `removed` tokens left the context, their spill no longer matters. */
export function ledgerClearBatch(
  ledger: TokenLedger,
  cleared: { count: number; removed: number; spillExtra: number },
): void {
  ledger.editing.batches += 1;
  ledger.editing.clearedResults += cleared.count;
  ledger.editing.tokensRemoved += cleared.removed;
  ledger.inContext.editing += cleared.removed;
  ledger.inContext.spill = Math.max(0, ledger.inContext.spill - cleared.spillExtra);
}

/** Avoided tokens in tokens and dollars, and what the technique itself cost. */
export interface TechniqueSaving {
  /** Prompt tokens the requests did not carry (summed over requests). */
  tokens: number;
  /** Those tokens at the run's average price per prompt token. */
  grossUsd: number;
  /** What the technique cost: its own calls, and the cache it rewrote. */
  overheadUsd: number;
  netUsd: number;
}

/** The figures `agent report` prints and the operation's status and result carry. */
export interface TokenEconomy {
  model: string | null;
  windowTokens: number;
  /** Every request's usage, failed attempts and compaction calls included. */
  usage: TokenUsage;
  cacheWrite5m: number;
  cacheWrite1h: number;
  costUsd: number;
  requests: number;
  failedSteps: number;
  /** Cache reads / prompt tokens, over all requests (0–1). */
  cacheHitRate: number;
  peakPromptTokens: number;
  /** The largest prompt as a percentage of the window. */
  peakContextPct: number;
  compactions: number;
  /** What compaction calls cost (part of `costUsd`). */
  compactionCostUsd: number;
  editBatches: number;
  clearedResults: number;
  saved: {
    /** The same requests sent without cache breakpoints, minus what they cost. */
    promptCaching: { usd: number };
    outputSpill: TechniqueSaving;
    contextEditing: TechniqueSaving;
    compaction: TechniqueSaving;
  };
}

export function tokenEconomy(
  usage: TokenUsage,
  ledger: TokenLedger,
  model: string | null,
  windowTokens: number,
): TokenEconomy {
  const price = priceOf(model);
  const prompt = promptTokens(usage);
  const promptUsd = (promptInputEquivalent(usage) * price.input) / 1_000_000;
  const perPromptToken = prompt > 0 ? promptUsd / prompt : 0;
  const rewriteUsd = (tokens: number) =>
    (tokens * (CACHE_WRITE_MULTIPLIER - CACHE_READ_MULTIPLIER) * price.input) / 1_000_000;
  const saving = (tokens: number, overheadUsd: number): TechniqueSaving => {
    const grossUsd = tokens * perPromptToken;
    return { tokens, grossUsd, overheadUsd, netUsd: grossUsd - overheadUsd };
  };
  const compactionCostUsd = costUsd(ledger.compaction.usage, model);
  const oneHour = usage.cacheWrite1h ?? 0;
  return {
    model,
    windowTokens,
    usage,
    cacheWrite5m: usage.cacheWrite - oneHour,
    cacheWrite1h: oneHour,
    costUsd: costUsd(usage, model),
    requests: ledger.requests,
    failedSteps: ledger.failedSteps,
    cacheHitRate: prompt > 0 ? usage.cacheRead / prompt : 0,
    peakPromptTokens: ledger.peakPromptTokens,
    peakContextPct: windowTokens > 0 ? (100 * ledger.peakPromptTokens) / windowTokens : 0,
    compactions: ledger.compaction.count,
    compactionCostUsd,
    editBatches: ledger.editing.batches,
    clearedResults: ledger.editing.clearedResults,
    saved: {
      promptCaching: { usd: (prompt * price.input) / 1_000_000 - promptUsd },
      outputSpill: saving(ledger.avoided.spill, 0),
      contextEditing: saving(ledger.avoided.editing, rewriteUsd(ledger.editing.cacheWriteAtBatches)),
      compaction: saving(ledger.avoided.compaction, compactionCostUsd + rewriteUsd(ledger.compaction.cacheWriteAfter)),
    },
  };
}
