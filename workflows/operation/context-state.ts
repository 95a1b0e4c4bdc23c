/**
 * The context window as the operation carries it across continue-as-new — its size, the tool results
 * it holds, its compactions and clear batches, the continuation of a cut or paused reply — and how
 * each recorded step changes it. Pure: these functions return the next state (and what the token
 * ledger counts of the change); the operation's state (`state.ts`) applies it. The decisions the
 * operation makes from the context at each step are in `context-window.ts`.
 */
import {
  clearedToolResultStub,
  toolResultText,
  type CompactContextResult,
  type CompactionReason,
  type ContextClear,
} from '../../common/context';
import type { TailBlock } from '../../common/context-fingerprint';
import type { ToolOutcome } from '../../common/hands';
import type { ModelStepResult } from '../../common/model-step';
import { promptTokens, type TextBlock } from '../../common/model-types';
import { estimateTokens } from '../../common/models';
import type { OperationSettings } from '../../common/operation';

/** A tool result in the context (or in the tail about to enter it). */
export interface TrackedResult {
  toolUseId: string;
  /** The model turn whose request carries it first. */
  turn: number;
  tokens: number;
  /** Tokens a stub would take off (0: not worth clearing, or nothing in the workspace to point to). */
  removable: number;
  /** Tokens the full output would have added (spilled output only). */
  spillExtra: number;
  cleared: boolean;
}

/** Carried across continue-as-new (field names are part of recorded histories: keep them). */
export interface ContextState {
  /** The model that answers (the operation's model, or the brain's default when the input names none). */
  model: string | null;
  /** Estimated prompt tokens of the context now, without the next tail. */
  tokens: number;
  /** Output tokens of the last reply: with the tail, what one turn adds (absent in older carries). */
  lastOutput?: number;
  compactions: number;
  edits: number;
  results: TrackedResult[];
  /** A compaction asked for (`agent compact`, a full window) and not yet run. */
  requested: CompactionReason | null;
  /** The next request is the first after a compaction. */
  afterCompaction: boolean;
  /** Replies continued in a row (cut at max_tokens, paused, window full). */
  continuations: number;
  /** Text of the cut or paused replies being continued: the final text starts with it. */
  partialText: string;
  /** The next request resumes a paused turn: it sends no tail. */
  resumePause: boolean;
}

export function newContextState(): ContextState {
  return {
    model: null,
    tokens: 0,
    compactions: 0,
    edits: 0,
    results: [],
    requested: null,
    afterCompaction: false,
    continuations: 0,
    partialText: '',
    resumePause: false,
  };
}

/**
 * The context state an operation starts with: empty, or — when it continues its lane's conversation
 * — the one the lane's previous operation ended with (`common/lanes.ts`), so its first checkpoint
 * plans from the context's real size and can still clear the tool results the context carries.
 */
export function startingContextState(continues: OperationSettings['continues']): ContextState {
  const state = newContextState();
  if (!continues) return state;
  return {
    ...state,
    model: continues.model ?? null,
    tokens: continues.tokens ?? 0,
    ...(continues.lastOutput !== undefined ? { lastOutput: continues.lastOutput } : {}),
    compactions: continues.compactions,
    edits: continues.edits,
    results: continues.clearable.map((result) => ({ ...result, cleared: false })),
  };
}

/** Results under this many tokens are never cleared: the stub would save next to nothing. */
const MIN_CLEARABLE_TOKENS = 256;

/** Stop reasons after which the reply is continued (`stop-reasons.ts`). */
const CONTINUED_STOP_REASONS = ['max_tokens', 'pause_turn', 'model_context_window_exceeded'];

/** The tool results of the batch just run (after turn `turn`), as the context tracks them once the next request carries them. */
export function trackedResults(
  turn: number,
  results: readonly TailBlock[],
  outcomes: ReadonlyMap<string, ToolOutcome>,
): TrackedResult[] {
  const tracked: TrackedResult[] = [];
  for (const block of results) {
    if (block.type !== 'tool_result') continue;
    const outcome = outcomes.get(block.tool_use_id);
    const text = toolResultText(block.content);
    const tokens = estimateTokens(text);
    const stub = estimateTokens(clearedToolResultStub(block.tool_use_id, 'tool', block.content));
    tracked.push({
      toolUseId: block.tool_use_id,
      turn: turn + 1,
      tokens,
      removable: outcome && !outcome.synthetic && tokens >= MIN_CLEARABLE_TOKENS ? Math.max(0, tokens - stub) : 0,
      spillExtra: outcome?.spill ? Math.max(0, estimateTokens(outcome.spill.bytes) - tokens) : 0,
      cleared: false,
    });
  }
  return tracked;
}

/**
 * Whether the context needs to keep tracking a result: one a clear batch may replace, or whose
 * spilled output the ledger counts when a compaction drops it. Any other result (a short output, a
 * synthetic one) changes no decision and no figure, and carrying it would make every continue-as-new
 * carry one entry per tool call the operation ever made.
 */
export function worthTracking(result: TrackedResult): boolean {
  return result.removable > 0 || result.spillExtra > 0;
}

/** What an answered model step changes in the context. */
export interface ContextAfterReply {
  context: ContextState;
  /** The clear batch the request carried, as the ledger counts it (absent without one). */
  cleared?: { count: number; removed: number; spillExtra: number };
  /** The final text, when the reply continues a cut or paused one: the parts joined as written. */
  finalText?: string;
}

/** The context after a model step answered: the clear batch it carried applied, its measured size, the continuation of a cut reply. */
export function contextAfterReply(
  context: ContextState,
  reply: ModelStepResult,
  clear: ContextClear | undefined,
): ContextAfterReply {
  let results = context.results;
  let cleared: ContextAfterReply['cleared'];
  if (clear) {
    const ids = new Set(clear.toolUseIds);
    const batch = results.filter((result) => ids.has(result.toolUseId) && !result.cleared);
    results = results.map((result) => (batch.includes(result) ? { ...result, cleared: true } : result));
    cleared = {
      count: batch.length,
      removed: batch.reduce((sum, result) => sum + result.removable, 0),
      spillExtra: batch.reduce((sum, result) => sum + result.spillExtra, 0),
    };
  }
  const text = reply.message.content
    .filter((block): block is TextBlock => block.type === 'text')
    .map((block) => block.text)
    .join('');
  const joined = `${context.partialText}${text}`;
  const cut = CONTINUED_STOP_REASONS.includes(reply.stopReason ?? '');
  const calls = reply.message.content.some((block) => block.type === 'tool_use');
  return {
    context: {
      ...context,
      results,
      edits: clear ? clear.batch : context.edits,
      afterCompaction: false,
      resumePause: false,
      model: reply.message.model || context.model,
      tokens: promptTokens(reply.usage) + reply.usage.output,
      lastOutput: reply.usage.output,
      partialText: cut && !calls ? joined : '',
      continuations: cut ? context.continuations : 0,
    },
    ...(cleared ? { cleared } : {}),
    ...(context.partialText ? { finalText: joined.trim() } : {}),
  };
}

/** What a completed compaction changes in the context. */
export interface ContextAfterCompaction {
  context: ContextState;
  /** What left the context with the turns the summary replaced, as the ledger counts it. */
  dropped: { spillExtra: number; clearedTokens: number };
}

/**
 * The context after a compaction after turn `turn`: its size and counts from the result, and only
 * the tool results of the turns kept verbatim (the newest `keepTurns`).
 */
export function contextAfterCompaction(
  context: ContextState,
  turn: number,
  keepTurns: number,
  result: CompactContextResult,
): ContextAfterCompaction {
  const firstKept = turn - keepTurns + 2;
  const dropped = context.results.filter((r) => r.turn < firstKept);
  return {
    context: {
      ...context,
      results: context.results.filter((r) => r.turn >= firstKept),
      compactions: result.context.compactions,
      tokens: result.tokensAfter,
      model: result.model || context.model,
      requested: null,
      afterCompaction: true,
    },
    dropped: {
      spillExtra: dropped.filter((r) => !r.cleared).reduce((sum, r) => sum + r.spillExtra, 0),
      clearedTokens: dropped.filter((r) => r.cleared).reduce((sum, r) => sum + r.removable, 0),
    },
  };
}
