/**
 * Turns a scripted turn into the assistant message the API would return: content blocks in API
 * order (thinking, text, tool_use), stop sequences and `max_tokens` applied, and the output token
 * count. Truncation at `max_tokens` cuts text at a character and tool input at a top-level field;
 * a cut tool_use block is kept, its input incomplete, as the API does.
 */
import type { ScriptedFault, ScriptedStopReason, ScriptedTurn } from './script';
import { thinkingSignature } from './thinking';
import { blockTokens, CHARS_PER_TOKEN, textTokens } from './token-estimate';
import type { MessagesRequestBody } from './validation';

type Json = Record<string, unknown>;

/** An answer that cannot be given to this request: the run went off-script. */
export class ScriptViolation extends Error {
  override name = 'ScriptViolation';
}

export interface ScriptedReply {
  content: Json[];
  /** Indexes of tool_use blocks whose input was cut by `max_tokens` (streamed without closing). */
  incompleteBlocks: Set<number>;
  stopReason: ScriptedStopReason;
  stopSequence: string | null;
  outputTokens: number;
}

export function buildReply(turn: ScriptedTurn, body: MessagesRequestBody, nextToolUseId: () => string): ScriptedReply {
  const content: Json[] = [];
  if (turn.thinking !== undefined) {
    if (body.thinking?.type !== 'enabled' && body.thinking?.type !== 'adaptive') {
      throw new ScriptViolation('the turn thinks, but the request does not enable thinking');
    }
    content.push({ type: 'thinking', thinking: turn.thinking, signature: thinkingSignature(turn.thinking) });
  }
  let stopSequence: string | null = null;
  let text = turn.text;
  if (text !== undefined) {
    const stop = firstStopSequence(text, body.stop_sequences ?? []);
    if (stop) {
      text = text.slice(0, stop.index);
      stopSequence = stop.sequence;
    }
    if (text.length > 0) content.push({ type: 'text', text });
  }
  const tools = new Map((body.tools ?? []).map((tool) => [tool.name, tool as Json]));
  if (stopSequence === null) {
    for (const call of turn.toolCalls ?? []) {
      const tool = tools.get(call.name);
      if (!tool) {
        throw new ScriptViolation(
          `the turn calls tool "${call.name}", but the request offers ${tools.size ? [...tools.keys()].map((n) => `"${n}"`).join(', ') : 'no tools'}`,
        );
      }
      const input =
        turn.fault?.type === 'malformed_tool_call'
          ? malformed(call.input, tool, turn.fault.mutation ?? 'invented_field')
          : call.input;
      content.push({ type: 'tool_use', id: call.id ?? nextToolUseId(), name: call.name, input });
    }
  }

  const defaultStop: ScriptedStopReason = content.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn';
  const budget = Math.min(body.max_tokens, cutOf(turn.fault) ?? Number.POSITIVE_INFINITY);
  const cut = truncate(content, budget);
  if (cut) return { ...cut, stopReason: 'max_tokens', stopSequence: null, outputTokens: budget };
  return {
    content,
    incompleteBlocks: new Set(),
    stopReason: stopSequence !== null ? 'stop_sequence' : (turn.stopReason ?? defaultStop),
    stopSequence,
    outputTokens: Math.max(
      1,
      content.reduce((sum, block) => sum + blockTokens(block), 0),
    ),
  };
}

function cutOf(fault: ScriptedFault | undefined): number | undefined {
  return fault?.type === 'cut_at_max_tokens' ? fault.outputTokens : undefined;
}

function firstStopSequence(text: string, sequences: string[]): { index: number; sequence: string } | null {
  let best: { index: number; sequence: string } | null = null;
  for (const sequence of sequences) {
    const index = sequence.length > 0 ? text.indexOf(sequence) : -1;
    if (index >= 0 && (!best || index < best.index)) best = { index, sequence };
  }
  return best;
}

/** Blocks cut to `budget` output tokens, or null when everything fits. */
function truncate(content: Json[], budget: number): Pick<ScriptedReply, 'content' | 'incompleteBlocks'> | null {
  const total = content.reduce((sum, block) => sum + blockTokens(block), 0);
  if (total <= budget) return null;
  const kept: Json[] = [];
  const incompleteBlocks = new Set<number>();
  let left = budget;
  for (const block of content) {
    const tokens = blockTokens(block);
    if (tokens <= left) {
      kept.push(block);
      left -= tokens;
      continue;
    }
    if (block.type === 'text' && left > 0)
      kept.push({ ...block, text: String(block.text).slice(0, left * CHARS_PER_TOKEN) });
    if (block.type === 'thinking' && left > 0)
      kept.push({ ...block, thinking: String(block.thinking).slice(0, left * CHARS_PER_TOKEN) });
    if (block.type === 'tool_use') {
      incompleteBlocks.add(kept.length);
      kept.push({ ...block, input: fittingFields(String(block.name), block.input as Json, left) });
    }
    break;
  }
  return { content: kept, incompleteBlocks };
}

function fittingFields(name: string, input: Json, budget: number): Json {
  const partial: Json = {};
  for (const [key, value] of Object.entries(input)) {
    const next = { ...partial, [key]: value };
    if (textTokens(name + JSON.stringify(next)) > budget) break;
    partial[key] = value;
  }
  return partial;
}

/** The tool input made to violate the tool's schema, the way models sometimes do. */
function malformed(
  input: Record<string, unknown>,
  tool: Json,
  mutation: 'invented_field' | 'missing_required' | 'wrong_type',
): Json {
  const schema = (tool.input_schema ?? {}) as Json;
  const properties = Object.keys((schema.properties ?? {}) as Json);
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  const first = required[0] ?? properties[0] ?? Object.keys(input)[0];
  switch (mutation) {
    case 'invented_field':
      return { ...input, [`${first ?? 'field'}2`]: first !== undefined ? (input[first] ?? 'invented') : 'invented' };
    case 'missing_required': {
      if (first === undefined)
        throw new ScriptViolation(`tool "${String(tool.name)}" has no field a malformed call could leave out`);
      const { [first]: _left, ...rest } = input;
      return rest;
    }
    case 'wrong_type': {
      if (first === undefined)
        throw new ScriptViolation(`tool "${String(tool.name)}" has no field a malformed call could mistype`);
      return { ...input, [first]: typeof input[first] === 'number' ? String(input[first]) : 12345 };
    }
  }
}
