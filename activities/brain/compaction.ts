/**
 * The summary call of a compaction: its request (the context as the model has seen it, the pending
 * tail, and the instruction — so the call reads the cached prefix), its reduced form when the full
 * context did not fit the window, and the summary taken from the reply (cut and marked when too long).
 */
import type Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/common';
import { compactionInstruction, truncatedSummaryMarker, type CompactContextInput } from '../../common/context';
import { CHARS_PER_TOKEN_ESTIMATE, estimateMessagesTokens, estimateTokens } from '../../common/models';
import type { ModelFailureDetails, ModelReply, ModelRequest, TextBlock } from '../../common/model-types';
import { withClearedResults, type AssembledContext } from './context-assembly';

/** `ApplicationFailure.type`s of a compaction that cannot produce a summary. */
export const COMPACTION_FAILURE_TYPES = {
  /** The reply held no text (e.g. only tool calls). Retryable: the model may answer differently. */
  emptySummary: 'CompactionEmptySummary',
  /** The context has too few turns to replace. Not retryable. */
  nothingToCompact: 'CompactionNotPossible',
} as const;

/** Estimated prompt tokens of a request: tools, system and messages. */
export function estimatePromptTokens(
  system: string,
  tools: readonly Anthropic.Tool[],
  messages: readonly Anthropic.MessageParam[],
): number {
  const toolTokens = tools.reduce(
    (sum, tool) => sum + estimateTokens(tool.name + (tool.description ?? '') + JSON.stringify(tool.input_schema)),
    0,
  );
  return toolTokens + estimateTokens(system) + estimateMessagesTokens(messages);
}

export function summaryRequest(
  context: AssembledContext,
  input: CompactContextInput,
  tools: Anthropic.Tool[],
  replaced: number,
): ModelRequest {
  const instruction: Anthropic.TextBlockParam = { type: 'text', text: compactionInstruction(input.keepTurns) };
  const last: Anthropic.MessageParam = { role: 'user', content: [...input.tail, instruction] };
  const messages = input.reduced ? reducedMessages(context, input, tools, replaced, last) : context.messages;
  return {
    system: context.system,
    tools,
    messages: [...messages, last],
    maxTokens: input.summaryMaxTokens,
    ...(input.model !== undefined ? { model: input.model } : {}),
  };
}

/**
 * The context made to fit: every tool result before the kept turns replaced by its stub, then the
 * oldest turns (an assistant message and the results answering it) left out, with a note, until
 * the request is estimated under `input.fitTokens`.
 */
function reducedMessages(
  context: AssembledContext,
  input: CompactContextInput,
  tools: Anthropic.Tool[],
  replaced: number,
  last: Anthropic.MessageParam,
): Anthropic.MessageParam[] {
  const oldIds = context.messages
    .slice(0, replaced)
    .flatMap((message) =>
      typeof message.content === 'string'
        ? []
        : message.content.flatMap((block) => (block.type === 'tool_result' ? [block.tool_use_id] : [])),
    );
  const messages = withClearedResults(context, { batch: context.edits, toolUseIds: oldIds }).messages;
  let left = 0;
  // The replaced part is messages[0 .. replaced - 2·left - 1]: a user message, then whole turns.
  while (
    replaced - 2 * left >= 3 &&
    estimatePromptTokens(context.system, tools, [...messages, last]) > input.fitTokens
  ) {
    messages.splice(1, 2);
    left += 1;
  }
  if (left > 0) {
    const first = messages[0]!;
    const blocks: Anthropic.ContentBlockParam[] =
      typeof first.content === 'string' ? [{ type: 'text', text: first.content }] : [...first.content];
    blocks.push({
      type: 'text',
      text: `[${left} earlier turn${left === 1 ? '' : 's'} left out of this request to fit the context window; they stay in the operation's history]`,
    });
    messages[0] = { role: 'user', content: blocks };
  }
  return messages;
}

/** The summary text of the reply, cut and marked when it ran past the limit; throws when there is none. */
export function summaryOf(reply: ModelReply, input: CompactContextInput): { summary: string; truncated: boolean } {
  const text = reply.message.content
    .filter((block): block is TextBlock => block.type === 'text')
    .map((block) => block.text)
    .join('\n')
    .trim();
  if (!text) {
    const details: ModelFailureDetails = {
      status: null,
      apiErrorType: null,
      requestId: reply.requestId,
      usage: reply.usage,
      failedAttemptsUsage: reply.failedAttemptsUsage ?? null,
      retryAfterMs: null,
    };
    throw ApplicationFailure.create({
      type: COMPACTION_FAILURE_TYPES.emptySummary,
      message: `the compaction call answered without a summary (stop reason ${reply.stopReason}, ${reply.message.content.length} blocks, none of them text)`,
      details: [details],
    });
  }
  const limit = input.summaryMaxTokens * CHARS_PER_TOKEN_ESTIMATE;
  const cut = reply.stopReason === 'max_tokens' || text.length > limit;
  if (!cut) return { summary: text, truncated: false };
  return { summary: `${text.slice(0, limit)}\n\n${truncatedSummaryMarker(input.summaryMaxTokens)}`, truncated: true };
}
