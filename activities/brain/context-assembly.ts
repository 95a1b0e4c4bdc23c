/**
 * How a model context is assembled from recorded steps — one set of pure functions used both by
 * the brain's warm path (extending its cached context as steps run) and by the rebuild from history
 * (`history-context.ts`), so a cold cache produces byte-for-byte the request a warm one would:
 *  - a model step: its `clear` batch applied to the base (tool results replaced by stubs), then its
 *    tail as a user message and its reply as the assistant message (a resumed paused turn has no
 *    tail: the reply's blocks join the paused message);
 *  - a compaction: the context becomes `[user: goal + summary]` followed by the kept turns, exactly
 *    as the compaction step recorded them.
 */
import type Anthropic from '@anthropic-ai/sdk';
import {
  clearedToolResultStub,
  compactionHead,
  type CompactContextInput,
  type CompactContextResult,
  type ContextClear,
} from '../../common/context';
import type { ModelStepInput, ModelStepResult } from '../../common/model-step';
import type { ContextFingerprint, TailBlock } from '../../common/context-fingerprint';
import type { RecordedStep } from '../../common/recorded-steps';

export interface AssembledContext {
  system: string;
  /** Every message the model sees on this lane, in order, ending with its last reply. */
  messages: Anthropic.MessageParam[];
  /** Id of the last assistant message (`null` before the first reply). */
  lastReplyId: string | null;
  /** Compactions and clear batches applied so far. */
  compactions: number;
  edits: number;
}

export function emptyContext(system: string): AssembledContext {
  return { system, messages: [], lastReplyId: null, compactions: 0, edits: 0 };
}

export function fingerprintOf(context: AssembledContext): Required<ContextFingerprint> {
  return {
    messages: context.messages.length,
    lastReplyId: context.lastReplyId,
    compactions: context.compactions,
    edits: context.edits,
  };
}

/** Whether `context` is the one `fingerprint` describes (fields absent in older steps count as 0). */
export function matchesFingerprint(context: AssembledContext, fingerprint: ContextFingerprint): boolean {
  return (
    context.messages.length === fingerprint.messages &&
    context.lastReplyId === fingerprint.lastReplyId &&
    context.compactions === (fingerprint.compactions ?? 0) &&
    context.edits === (fingerprint.edits ?? 0)
  );
}

export function describeFingerprint(fingerprint: ContextFingerprint): string {
  return `${fingerprint.messages} messages ending at ${fingerprint.lastReplyId}, ${fingerprint.compactions ?? 0} compactions, ${fingerprint.edits ?? 0} clear batches`;
}

/** The request's messages: the context and the tail as a user message (none when resuming a paused turn). */
export function requestMessages(context: AssembledContext, tail: TailBlock[]): Anthropic.MessageParam[] {
  return tail.length === 0 ? [...context.messages] : [...context.messages, { role: 'user', content: tail }];
}

/** The context after a model step whose request was `requestMessages(context, tail)`. */
export function withReply(
  context: AssembledContext,
  tail: TailBlock[],
  reply: Pick<ModelStepResult, 'message'>,
): AssembledContext {
  const content = reply.message.content as Anthropic.ContentBlockParam[];
  const messages = requestMessages(context, tail);
  const last = messages[messages.length - 1];
  if (tail.length === 0 && last?.role === 'assistant') {
    const earlier = typeof last.content === 'string' ? [{ type: 'text' as const, text: last.content }] : last.content;
    messages[messages.length - 1] = { role: 'assistant', content: [...earlier, ...content] };
  } else {
    messages.push({ role: 'assistant', content });
  }
  return { ...context, messages, lastReplyId: reply.message.id };
}

/** The context with the batch's tool results replaced by stubs (results already cleared stay as they are). */
export function withClearedResults(context: AssembledContext, clear: ContextClear | undefined): AssembledContext {
  if (!clear) return context;
  const ids = new Set(clear.toolUseIds);
  const messages = context.messages.map((message, index) => {
    if (message.role !== 'user' || typeof message.content === 'string') return message;
    if (!message.content.some((block) => block.type === 'tool_result' && ids.has(block.tool_use_id))) return message;
    const names = toolNamesOf(context.messages[index - 1]);
    return {
      ...message,
      content: message.content.map((block) =>
        block.type === 'tool_result' && ids.has(block.tool_use_id)
          ? {
              ...block,
              content: clearedToolResultStub(block.tool_use_id, names.get(block.tool_use_id) ?? 'tool', block.content),
            }
          : block,
      ),
    };
  });
  return { ...context, messages, edits: clear.batch };
}

function toolNamesOf(message: Anthropic.MessageParam | undefined): Map<string, string> {
  const names = new Map<string, string>();
  if (message && typeof message.content !== 'string') {
    for (const block of message.content) if (block.type === 'tool_use') names.set(block.id, block.name);
  }
  return names;
}

/**
 * The newest `keepTurns` turns of the context — from the assistant message `keepTurns` replies back
 * to the last reply — and how many messages before them a summary would replace; null when that is
 * too little to be worth a compaction (the first message and less than one whole turn).
 */
export function turnsToKeep(
  context: AssembledContext,
  keepTurns: number,
): { retained: Anthropic.MessageParam[]; replaced: number } | null {
  const kept = 2 * keepTurns - 1;
  const replaced = context.messages.length - kept;
  if (replaced < 3 || context.messages[replaced]?.role !== 'assistant') return null;
  return { retained: context.messages.slice(replaced), replaced };
}

/** The context a compaction leaves: system, `[user: goal + summary]`, then the kept turns. */
export function compactedContext(input: CompactContextInput, result: CompactContextResult): AssembledContext {
  return {
    system: result.system,
    messages: [
      { role: 'user', content: [{ type: 'text', text: compactionHead(input, result.summary) }] },
      ...(result.retained as Anthropic.MessageParam[]),
    ],
    lastReplyId: result.context.lastReplyId,
    compactions: result.context.compactions,
    edits: result.context.edits,
  };
}

/** The context after one recorded model step, from the context before it. */
export function afterModelStep(
  context: AssembledContext,
  input: ModelStepInput,
  result: ModelStepResult,
): AssembledContext {
  const base =
    context.messages.length === 0 && input.system !== undefined ? { ...context, system: input.system } : context;
  return withReply(withClearedResults(base, input.clear), input.tail, result);
}

/**
 * The context at the end of a sequence of completed steps (in order). Starts at the latest
 * compaction among them — it holds everything the context keeps from before — or, without one,
 * from an empty context whose system prompt the first model step carries.
 */
export function assembleContext(steps: readonly RecordedStep[]): AssembledContext {
  const done = steps.filter((step) => step.result !== undefined);
  let start = -1;
  done.forEach((step, index) => {
    if (step.kind === 'compaction') start = index;
  });
  let context = emptyContext('');
  if (start >= 0) {
    const compaction = done[start] as Extract<RecordedStep, { kind: 'compaction' }>;
    context = compactedContext(compaction.input, compaction.result!);
  }
  for (const step of done.slice(start + 1)) {
    if (step.kind === 'model') context = afterModelStep(context, step.input, step.result!);
  }
  return context;
}
