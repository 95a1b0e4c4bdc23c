/**
 * The context policy of an operation and the contract of its context steps: compaction (a recorded
 * model call that writes a summary; the next request is system + summary + the newest turns
 * verbatim) and context editing (old tool results replaced by a short stub, in batches).
 *
 * Both are decided by the workflow from recorded figures (deterministic) and recorded in history —
 * a compaction as its own `compactContext` activity (summary "compaction"), a batch of cleared tool
 * results as the `clear` field of the model step that first sends the edited context — so the brain
 * rebuilds exactly the same request from history alone (`activities/brain/context-assembly.ts`).
 * The originals are never removed from history: the context is a view of it.
 *
 * Thresholds are percentages of the model's context window (`models.ts`), applied to the estimated
 * prompt of the next request (the last request's measured prompt + its reply + the new tail).
 *
 * Deterministic: zod, constants and pure functions (imported by workflow code).
 */
import type { McpToolDefinition } from './mcp';
import { z } from 'zod';
import type { ContextFingerprint, TailBlock } from './context-fingerprint';
import type { MessageParam, TokenUsage } from './model-types';

const percent = (what: string) =>
  z
    .number({ error: `must be a number (percent of the context window ${what})` })
    .min(10, 'must be between 10 and 95 (percent of the context window)')
    .max(95, 'must be between 10 and 95 (percent of the context window)');

export const contextEditingSchema = z.strictObject({
  /** Replace old tool results by a stub (the full output stays in the workspace). */
  enabled: z.boolean().default(true),
  /**
   * Clear once the next request (and the turn after it) would pass this % of the window — by
   * default shortly before a compaction would be needed: a clear batch is then tried first, and the
   * context is compacted only when clearing no longer keeps it under `compactAtPct`…
   */
  atPct: percent('at which old tool results are cleared').default(65),
  /** …keeping the tool results of the newest `keepTurns` turns… */
  keepTurns: z.int().min(1).max(100).default(4),
  /**
   * …and only when a batch would clear at least this many tokens (default: a quarter of the
   * window). Each batch rewrites the prompt cache from the first cleared result on, so clearing a
   * little at a time costs more than it saves (`bench/results/latest.md`, the editing sweep).
   */
  minClearTokens: z.int().min(0).max(10_000_000).optional(),
});

export const contextPolicySchema = z.strictObject({
  /** The model's context window in tokens; default: the table in `common/models.ts`. */
  windowTokens: z.int().min(4_096).max(10_000_000).optional(),
  /** Compact before a request that would pass this % of the window (seed 000: > 70%, close out). */
  compactAtPct: percent('at which the context is compacted').default(70),
  /** Turns kept verbatim after a compaction, the newest ones (at least one: the pending tool results answer it). */
  keepTurns: z.int().min(1).max(20).default(2),
  /** `max_tokens` of the compaction call: the longest summary. A longer one is cut and marked. */
  summaryMaxTokens: z.int().min(256).max(32_000).default(4_096),
  /** Compact when the threshold is reached, on a prompt-too-long error and a full window; `false`: never (manual `agent compact` still works). */
  compaction: z.boolean().default(true),
  editing: contextEditingSchema.prefault({}),
  /**
   * How many times in a row a reply cut off at `max_tokens` (no tool call) is continued, or a
   * `pause_turn` resumed, before the operation fails with the reason.
   */
  maxContinuations: z.int().min(0).max(50).default(5),
});

export type ContextPolicy = z.output<typeof contextPolicySchema>;
export type ContextPolicyInput = z.input<typeof contextPolicySchema>;

/** The activity type of a compaction step, and its label in the Web UI: what a reader of the history looks for. */
export const COMPACT_CONTEXT_ACTIVITY = 'compactContext';
export const COMPACTION_SUMMARY = 'compaction';

/** Why a compaction ran. */
export type CompactionReason =
  /** The next request would pass `compactAtPct` of the window. */
  | 'threshold'
  /** `agent compact` (the `compact` Update). */
  | 'manual'
  /** The API refused the request as too large (413) or over the window (400 prompt too long). */
  | 'too-large'
  /** A reply stopped with `model_context_window_exceeded`. */
  | 'window-full';

export interface CompactContextInput {
  /** Workflow id of the operation: the cache key and where the history lives. */
  operationId: string;
  lane: string;
  /** Model turns taken before this compaction. */
  turn: number;
  /** 1-based number of this compaction in the lane's context (the context's `compactions` after it). */
  compaction: number;
  reason: CompactionReason;
  model?: string;
  /** The context to compact. */
  base: ContextFingerprint;
  /**
   * The user message the next model step will send (tool results, steering). The summary call sees
   * it (it answers the last reply's tool calls), the compacted context does not take it yet.
   */
  tail: TailBlock[];
  /** Newest turns kept verbatim. */
  keepTurns: number;
  /** The operation's goal, kept verbatim at the head of the compacted context. */
  goal: string;
  summaryMaxTokens: number;
  /**
   * Send a reduced copy of the context to the summary call — tool results before the kept turns
   * stubbed, then the oldest turns left out until it is estimated under `fitTokens` — because the
   * full one did not fit.
   */
  reduced: boolean;
  /** What a reduced summary request must stay under (estimated prompt tokens). */
  fitTokens: number;
  /** As `ModelStepInput.continues`: set while `base` is the context taken over from the lane's previous operation. */
  continues?: string;
  /** As `ModelStepInput.mcpTools`. */
  mcpTools?: McpToolDefinition[];
}

export interface CompactContextResult {
  /** The summary as placed in the context (cut and marked when it ran past `summaryMaxTokens`). */
  summary: string;
  truncated: boolean;
  /** The system prompt of the context (the compacted context keeps it). */
  system: string;
  /**
   * The newest turns, verbatim: from the assistant message `keepTurns` replies back to the last
   * reply. The compacted context is `[user: compactionHead(...)]` followed by these.
   */
  retained: MessageParam[];
  /** Messages of the earlier context the summary replaces. */
  replacedMessages: number;
  /** The context after the compaction. */
  context: Required<ContextFingerprint>;
  /** Estimated prompt tokens (tools + system + messages) before and after. */
  tokensBefore: number;
  tokensAfter: number;
  /** The summary call's usage, failed attempts apart (as in `ModelReply`). */
  usage: TokenUsage;
  failedAttemptsUsage?: TokenUsage;
  requestId: string | null;
  replyId: string;
  model: string;
  stopReason: string | null;
  /** Whether the brain rebuilt the context from history for this step. */
  rebuilt: boolean;
}

/** A batch of tool results replaced by stubs, sent with the model step whose request is the first to carry it. */
export interface ContextClear {
  /** 1-based batch number (the context's `edits` after it). */
  batch: number;
  toolUseIds: string[];
}

/** The first message of a compacted context: the goal verbatim, then the summary. */
export function compactionHead(
  input: Pick<CompactContextInput, 'goal' | 'compaction' | 'turn'>,
  summary: string,
): string {
  return [
    `[context compacted by the harness (compaction ${input.compaction}, after turn ${input.turn}): the summary below replaces the earlier conversation; the newest turns follow verbatim. The full record stays in the operation's history.]`,
    '',
    '## Goal',
    input.goal,
    '',
    '## Summary of the work so far',
    summary,
  ].join('\n');
}

/** The instruction that ends the summary call's request. */
export function compactionInstruction(keepTurns: number): string {
  return [
    `${COMPACTION_REQUEST_MARKER} The context is about to be compacted. Do not call any tool now: answer with a summary only, in text.`,
    'The summary replaces the conversation so far; you will continue the task from it and the newest',
    `${keepTurns === 1 ? 'turn' : `${keepTurns} turns`}, which stay verbatim. Use these sections:`,
    '## Goal (as you understand it now) · ## Decisions (and why) · ## Files touched (paths, what changed) ·',
    '## Commands and results that still matter · ## Open problems · ## Next step (exactly what to do next).',
    'Keep paths, names, numbers and error messages exact. Say where large outputs are saved rather than copying them.',
  ].join(' ');
}

/** Starts the instruction of every summary call (how a scripted model or a reader of requests recognises one). */
export const COMPACTION_REQUEST_MARKER = '[harness: compaction]';

/** Marks a summary cut at `summaryMaxTokens`. */
export function truncatedSummaryMarker(maxTokens: number): string {
  return `[summary truncated by the harness: it reached the ${maxTokens}-token limit]`;
}

/** Where the hands keep every tool call's full output (`activities/hands/journal.ts`). */
export const TOOL_OUTPUT_DIR = '/workspace/.agent/out';

/** Text of a tool result's content (string, or its text blocks joined). */
export function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block) =>
      typeof block === 'object' && block !== null && (block as { type?: unknown }).type === 'text'
        ? String((block as { text?: unknown }).text ?? '')
        : '',
    )
    .join('\n');
}

/**
 * The stub that replaces a cleared tool result: what it was, how big, and where the full output is
 * (the spill path the result named, else the hands' output file of the call).
 */
export function clearedToolResultStub(toolUseId: string, toolName: string, content: unknown): string {
  const text = toolResultText(content);
  const spilled = /Full output: (\S+?);/.exec(text)?.[1];
  const path = spilled ?? `${TOOL_OUTPUT_DIR}/${toolUseId}.txt`;
  const kb =
    text.length >= 10 * 1024 ? `${Math.round(text.length / 1024)} KB` : `${(text.length / 1024).toFixed(1)} KB`;
  return `[cleared: ${kb} of ${toolName} output, read ${path} (read_file) if you need it again]`;
}
