/**
 * The Messages API's server-sent event sequence for one message: `message_start` (empty content,
 * input usage, 1 output token) and a `ping`, then per block `content_block_start`, its deltas in
 * chunks (`text_delta`, `thinking_delta` + `signature_delta`, `input_json_delta` starting with an
 * empty chunk) and `content_block_stop`, then `message_delta` (stop reason, cumulative usage) and
 * `message_stop`. Events come in groups so faults can be injected between blocks.
 */
import type { ScriptedReply } from './reply';
import type { CacheUsage } from './cache-simulation';

export interface SseEvent {
  event: string;
  data: unknown;
}

export interface MessageEventGroups {
  /** `message_start` and `ping`. */
  head: SseEvent[];
  /** One group per content block. */
  blocks: SseEvent[][];
  /** `message_delta` and `message_stop`. */
  tail: SseEvent[];
}

export interface MessageIdentity {
  id: string;
  model: string;
}

type Json = Record<string, unknown>;

export function formatSse({ event, data }: SseEvent): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export function messageEventGroups(
  identity: MessageIdentity,
  reply: ScriptedReply,
  usage: CacheUsage,
  chunkChars: number,
): MessageEventGroups {
  const head: SseEvent[] = [
    {
      event: 'message_start',
      data: {
        type: 'message_start',
        message: {
          id: identity.id,
          type: 'message',
          role: 'assistant',
          model: identity.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { ...usage, output_tokens: 1, service_tier: 'standard' },
        },
      },
    },
    { event: 'ping', data: { type: 'ping' } },
  ];
  const blocks = reply.content.map((block, index) =>
    blockEvents(block, index, reply.incompleteBlocks.has(index), chunkChars),
  );
  const tail: SseEvent[] = [
    {
      event: 'message_delta',
      data: {
        type: 'message_delta',
        delta: { stop_reason: reply.stopReason, stop_sequence: reply.stopSequence },
        usage: {
          input_tokens: usage.input_tokens,
          cache_creation_input_tokens: usage.cache_creation_input_tokens,
          cache_read_input_tokens: usage.cache_read_input_tokens,
          output_tokens: reply.outputTokens,
        },
      },
    },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ];
  return { head, blocks, tail };
}

function chunks(text: string, size: number): string[] {
  const parts: string[] = [];
  for (let offset = 0; offset < text.length; offset += size) parts.push(text.slice(offset, offset + size));
  return parts;
}

function delta(index: number, body: Json): SseEvent {
  return { event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: body } };
}

function blockEvents(block: Json, index: number, incomplete: boolean, chunkChars: number): SseEvent[] {
  const start = (contentBlock: Json): SseEvent => ({
    event: 'content_block_start',
    data: { type: 'content_block_start', index, content_block: contentBlock },
  });
  const events: SseEvent[] = [];
  switch (block.type) {
    case 'text':
      events.push(start({ type: 'text', text: '' }));
      for (const part of chunks(String(block.text), chunkChars))
        events.push(delta(index, { type: 'text_delta', text: part }));
      break;
    case 'thinking':
      events.push(start({ type: 'thinking', thinking: '', signature: '' }));
      for (const part of chunks(String(block.thinking), chunkChars))
        events.push(delta(index, { type: 'thinking_delta', thinking: part }));
      events.push(delta(index, { type: 'signature_delta', signature: block.signature }));
      break;
    case 'tool_use': {
      events.push(start({ type: 'tool_use', id: block.id, name: block.name, input: {} }));
      let json = JSON.stringify(block.input);
      // A cut call streams its input without the closing brace, as a cut stream would.
      if (incomplete) json = json.slice(0, -1);
      events.push(delta(index, { type: 'input_json_delta', partial_json: '' }));
      for (const part of chunks(json, chunkChars))
        events.push(delta(index, { type: 'input_json_delta', partial_json: part }));
      break;
    }
    default:
      events.push(start(block));
  }
  events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
  return events;
}
