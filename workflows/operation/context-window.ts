/**
 * The operation's view of its context window: how big the next request will be, which tool results
 * it carries (and which may be cleared), and the token ledger. Pure bookkeeping over recorded
 * figures — every request's measured usage, the tool results' sizes, the compactions' estimates —
 * so every decision it makes is deterministic and replays.
 *
 * The next request's size is the last request's measured prompt plus its reply (or a compaction's
 * estimate of the compacted context), minus what a clear batch removes, plus the new tail.
 */
import {
  clearedToolResultStub,
  toolResultText,
  type CompactContextResult,
  type ContextClear,
} from '../../common/context';
import type { ToolOutcome } from '../../common/hands';
import type { ModelStepResult } from '../../common/model-step';
import type { TailBlock } from '../../common/context-fingerprint';
import { promptTokens, type TextBlock } from '../../common/model-types';
import { contextWindowOf, estimateMessagesTokens, estimateTokens } from '../../common/models';
import {
  ledgerClearBatch,
  ledgerCompaction,
  ledgerModelRequest,
  ledgerToolResult,
  tokenEconomy,
  type TokenEconomy,
} from '../../common/token-ledger';
import { LANE_CLEARABLE_RESULTS_MAX, type LaneContext } from '../../common/lanes';
import type { ContextStatus } from '../../common/operation';
import type { OperationRun } from './state';

/** A clear batch frees at least this share of the window unless `editing.minClearTokens` says otherwise. */
const DEFAULT_MIN_CLEAR_SHARE = 0.25;

/** Results under this many tokens are never cleared: the stub would save next to nothing. */
const MIN_CLEARABLE_TOKENS = 256;

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
 * Whether the context holds enough to compact: the first message and at least one whole turn
 * besides the newest `keepTurns` (the brain's `turnsToKeep` applies the same rule).
 */
export function canCompact(op: OperationRun): boolean {
  return op.carry.messages >= 2 * op.settings.context.keepTurns + 2;
}

/** The tool results of the batch just run, as they will enter the context with the next request. */
export function trackToolResults(
  op: OperationRun,
  results: readonly TailBlock[],
  outcomes: ReadonlyMap<string, ToolOutcome>,
): void {
  const { context, turn } = op.carry;
  for (const block of results) {
    if (block.type !== 'tool_result') continue;
    const outcome = outcomes.get(block.tool_use_id);
    const text = toolResultText(block.content);
    const tokens = estimateTokens(text);
    const stub = estimateTokens(clearedToolResultStub(block.tool_use_id, 'tool', block.content));
    const spillExtra = outcome?.spill ? Math.max(0, estimateTokens(outcome.spill.bytes) - tokens) : 0;
    context.results.push({
      toolUseId: block.tool_use_id,
      turn: turn + 1,
      tokens,
      removable: outcome && !outcome.synthetic && tokens >= MIN_CLEARABLE_TOKENS ? Math.max(0, tokens - stub) : 0,
      spillExtra,
      cleared: false,
    });
    ledgerToolResult(op.carry.ledger, spillExtra);
  }
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

/** Records an answered model step: its request in the ledger, the clear batch it carried, the new context size. */
export function noteModelReply(op: OperationRun, reply: ModelStepResult, clear: ContextClear | undefined): void {
  const { context, ledger } = op.carry;
  if (clear) {
    const ids = new Set(clear.toolUseIds);
    const batch = context.results.filter((result) => ids.has(result.toolUseId) && !result.cleared);
    for (const result of batch) result.cleared = true;
    context.edits = clear.batch;
    ledgerClearBatch(ledger, {
      count: batch.length,
      removed: batch.reduce((sum, result) => sum + result.removable, 0),
      spillExtra: batch.reduce((sum, result) => sum + result.spillExtra, 0),
    });
  }
  ledgerModelRequest(ledger, reply.usage, {
    batch: clear !== undefined,
    firstAfterCompaction: context.afterCompaction,
  });
  context.afterCompaction = false;
  context.resumePause = false;
  context.model = reply.message.model || context.model;
  context.tokens = promptTokens(reply.usage) + reply.usage.output;
  context.lastOutput = reply.usage.output;
  // A reply that continues a cut or paused one: the final text is the parts joined as written.
  const text = reply.message.content
    .filter((block): block is TextBlock => block.type === 'text')
    .map((block) => block.text)
    .join('');
  const joined = `${context.partialText}${text}`;
  if (context.partialText) op.carry.finalText = joined.trim();
  const cut = CONTINUED_STOP_REASONS.includes(reply.stopReason ?? '');
  const calls = reply.message.content.some((block) => block.type === 'tool_use');
  context.partialText = cut && !calls ? joined : '';
  if (!cut) context.continuations = 0;
}

/** Stop reasons after which the reply is continued (`stop-reasons.ts`). */
const CONTINUED_STOP_REASONS = ['max_tokens', 'pause_turn', 'model_context_window_exceeded'];

/** Records a completed compaction: the ledger, the new context size, the results that left the context. */
export function noteCompaction(op: OperationRun, result: CompactContextResult): void {
  const { context, ledger, turn } = op.carry;
  const firstKept = turn - op.settings.context.keepTurns + 2;
  const dropped = context.results.filter((r) => r.turn < firstKept);
  context.results = context.results.filter((r) => r.turn >= firstKept);
  ledgerCompaction(ledger, result, {
    spillExtra: dropped.filter((r) => !r.cleared).reduce((sum, r) => sum + r.spillExtra, 0),
    clearedTokens: dropped.filter((r) => r.cleared).reduce((sum, r) => sum + r.removable, 0),
  });
  context.compactions = result.context.compactions;
  context.tokens = result.tokensAfter;
  context.model = result.model || context.model;
  context.requested = null;
  context.afterCompaction = true;
  op.carry.messages = result.context.messages;
  op.carry.lastReplyId = result.context.lastReplyId;
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
