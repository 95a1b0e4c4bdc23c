/**
 * The operation's view of its context window: how big the next request will be, which tool results
 * it carries (and which may be cleared), the token ledger, and how the brain identifies the context.
 * Read-only over recorded figures — every request's measured usage, the tool results' sizes, the
 * compactions' estimates (kept up to date by `context-state.ts`) — so every decision it makes is
 * deterministic and replays.
 *
 * The next request's size is the last request's measured prompt plus its reply (or a compaction's
 * estimate of the compacted context), minus what a clear batch removes, plus the new tail.
 */
import type { ContextClear } from '../../common/context';
import type { ContextFingerprint, TailBlock } from '../../common/context-fingerprint';
import { LANE_CLEARABLE_RESULTS_MAX, type LaneContext } from '../../common/lanes';
import { contextWindowOf, estimateMessagesTokens } from '../../common/models';
import type { ContextStatus } from '../../common/operation';
import { tokenEconomy, type TokenEconomy } from '../../common/token-ledger';
import type { OperationRun } from './state';

/** A clear batch frees at least this share of the window unless `editing.minClearTokens` says otherwise. */
const DEFAULT_MIN_CLEAR_SHARE = 0.25;

/** The context the operation ends with, where its lane's next operation continues (`common/lanes.ts`). */
export function laneContextOf(op: OperationRun): LaneContext {
  const { carry } = op;
  const { context } = carry;
  const clearable = context.results
    .filter((result) => !result.cleared && result.removable > 0)
    .slice(-LANE_CLEARABLE_RESULTS_MAX)
    .map(({ toolUseId, turn, tokens, removable, spillExtra }) => ({
      toolUseId,
      turn: turn - carry.turn,
      tokens,
      removable,
      spillExtra,
    }));
  return {
    messages: carry.messages,
    lastReplyId: carry.lastReplyId,
    compactions: context.compactions,
    edits: context.edits,
    tokens: context.tokens,
    ...(context.lastOutput !== undefined ? { lastOutput: context.lastOutput } : {}),
    model: context.model,
    clearable,
  };
}

export function modelOf(op: OperationRun): string | null {
  return op.settings.model ?? op.carry.context.model;
}

export function windowOf(op: OperationRun): number {
  return op.settings.context.windowTokens ?? contextWindowOf(modelOf(op));
}

export function tailTokens(tail: readonly TailBlock[]): number {
  return estimateMessagesTokens([{ content: tail }]);
}

/** Estimated prompt tokens of the next request, before any clear batch. */
export function nextRequestTokens(op: OperationRun): number {
  return op.carry.context.tokens + tailTokens(op.carry.tail);
}

/**
 * What the turn after the next one will add, assumed as big as this one (its tail and the last
 * reply), plus a summary call's instruction: compacting when the next request plus this would pass
 * the threshold keeps every request — the summary call included — under it.
 */
export function turnLookahead(op: OperationRun): number {
  return tailTokens(op.carry.tail) + (op.carry.context.lastOutput ?? 0) + SUMMARY_INSTRUCTION_TOKENS;
}

/** A generous estimate of the summary call's instruction (`compactionInstruction`). */
const SUMMARY_INSTRUCTION_TOKENS = 300;

/**
 * Whether a summary call carrying the whole context fits the window. A lane's next operation may take
 * over more than its window holds (another model, a conversation resumed from elsewhere): its first
 * compaction then summarises a reduced copy, as after a refused request, instead of being refused.
 */
export function summaryFitsWindow(op: OperationRun): boolean {
  return nextRequestTokens(op) + SUMMARY_INSTRUCTION_TOKENS <= windowOf(op);
}

/**
 * Whether the context holds enough to compact: the first message and at least one whole turn
 * besides the newest `keepTurns` (the brain's `turnsToKeep` applies the same rule).
 */
export function canCompact(op: OperationRun): boolean {
  return op.carry.messages >= 2 * op.settings.context.keepTurns + 2;
}

/**
 * The clear batch the next request should carry, if context editing is on, the request (with the
 * turn after it, `turnLookahead`) would pass `editing.atPct` of the window, and the results older
 * than `editing.keepTurns` turns would free at least `editing.minClearTokens` (default: a quarter
 * of the window). Returns the batch and the tokens it removes.
 */
export function planClearBatch(op: OperationRun): { clear: ContextClear; removed: number } | undefined {
  const { editing } = op.settings.context;
  const { context, turn } = op.carry;
  const window = windowOf(op);
  if (!editing.enabled || nextRequestTokens(op) + turnLookahead(op) <= (editing.atPct / 100) * window) return undefined;
  const candidates = context.results.filter(
    (result) => !result.cleared && result.removable > 0 && result.turn <= turn - editing.keepTurns,
  );
  const removed = candidates.reduce((sum, result) => sum + result.removable, 0);
  const minClear = editing.minClearTokens ?? Math.round(DEFAULT_MIN_CLEAR_SHARE * window);
  if (candidates.length === 0 || removed < minClear) return undefined;
  return { clear: { batch: context.edits + 1, toolUseIds: candidates.map((r) => r.toolUseId) }, removed };
}

/**
 * The oldest tool result a later clear batch may replace, after the batch this step carries (none
 * without context editing): the brain puts a cache breakpoint just before it.
 */
export function editFrontierOf(op: OperationRun): { editFrontier?: string } {
  if (!op.settings.context.editing.enabled) return {};
  const clearing = new Set(op.nextClear?.toolUseIds ?? []);
  const frontier = op.carry.context.results.find(
    (result) => !result.cleared && result.removable > 0 && !clearing.has(result.toolUseId),
  );
  return frontier ? { editFrontier: frontier.toolUseId } : {};
}

export function contextStatus(op: OperationRun): ContextStatus {
  const windowTokens = windowOf(op);
  const promptTokens = nextRequestTokens(op);
  return {
    windowTokens,
    promptTokens,
    pct: Math.round((1000 * promptTokens) / windowTokens) / 10,
    compactions: op.carry.context.compactions,
    editBatches: op.carry.context.edits,
    compactionRequested: op.carry.context.requested !== null,
  };
}

export function operationTokens(op: OperationRun): TokenEconomy {
  return tokenEconomy(op.carry.usage, op.carry.ledger, modelOf(op), windowOf(op));
}

/** The context the next step's request starts from, as the brain identifies it. */
export function contextFingerprint(op: OperationRun): Required<ContextFingerprint> {
  const { carry } = op;
  return {
    messages: carry.messages,
    lastReplyId: carry.lastReplyId,
    compactions: carry.context.compactions,
    edits: carry.context.edits,
  };
}

/**
 * `continues` for a context step whose base is still the context the operation took over from its
 * lane's previous operation (the brain then finds that context in the previous operation's cache or
 * history); nothing once the operation's own steps have moved the context on.
 */
export function continuationOf(op: OperationRun): { continues?: string } {
  const from = op.settings.continues;
  if (!from || from.messages === 0) return {};
  const base = contextFingerprint(op);
  const unchanged =
    base.messages === from.messages &&
    base.lastReplyId === from.lastReplyId &&
    base.compactions === from.compactions &&
    base.edits === from.edits;
  return unchanged ? { continues: from.operationId } : {};
}

/**
 * The fingerprint as a step's input records it: counts of 0 left out (the brain reads them as 0),
 * since every model step's history holds it.
 */
export function recordedFingerprint(op: OperationRun): ContextFingerprint {
  const { compactions, edits, ...rest } = contextFingerprint(op);
  return { ...rest, ...(compactions ? { compactions } : {}), ...(edits ? { edits } : {}) };
}
