/**
 * Builds the assistant message from Messages API stream events, the same way the SDK's own
 * `MessageStream` does: blocks as `content_block_start` announced them, text/thinking/signature/
 * citation deltas applied, tool input concatenated from `input_json_delta` chunks and parsed at the
 * end. Unknown event and delta types are ignored (the API may add new ones).
 */
import type {
  CacheCreation,
  ContentBlock,
  MessageDeltaUsage,
  RawMessageStreamEvent,
  Usage,
} from '@anthropic-ai/sdk/resources/messages';
import { partialParse } from '@anthropic-ai/sdk/_vendor/partial-json-parser/parser';
import type { AssistantMessage, TokenUsage } from '../../common/model-types';

type UsageFields = Pick<
  Usage,
  'input_tokens' | 'output_tokens' | 'cache_creation_input_tokens' | 'cache_read_input_tokens'
> & { cache_creation?: Pick<CacheCreation, 'ephemeral_1h_input_tokens'> | null };

export function usageFromApi(usage: UsageFields): TokenUsage {
  const result: TokenUsage = {
    input: usage.input_tokens,
    cacheWrite: usage.cache_creation_input_tokens ?? 0,
    cacheRead: usage.cache_read_input_tokens ?? 0,
    output: usage.output_tokens,
  };
  const oneHour = Math.min(usage.cache_creation?.ephemeral_1h_input_tokens ?? 0, result.cacheWrite);
  if (oneHour > 0) result.cacheWrite1h = oneHour;
  return result;
}

const TRACKS_TOOL_INPUT = new Set(['tool_use', 'server_tool_use']);

export class MessageAccumulator {
  private message: AssistantMessage | null = null;
  private usageSoFar: TokenUsage | null = null;
  private readonly toolInputJson = new Map<number, string>();
  private stopped = false;

  /** Usage as last reported (`message_start`, then cumulative `message_delta` figures). */
  get usage(): TokenUsage | null {
    return this.usageSoFar;
  }

  /** True once `message_stop` arrived. */
  get complete(): boolean {
    return this.stopped;
  }

  /** Applies one event; returns true when it changed the usage. */
  apply(event: RawMessageStreamEvent): boolean {
    switch (event.type) {
      case 'message_start': {
        const { id, type, role, model, content, stop_reason, stop_sequence } = event.message;
        this.message = { id, type, role, model, content: [...content], stop_reason, stop_sequence };
        this.usageSoFar = usageFromApi(event.message.usage);
        return true;
      }
      case 'content_block_start': {
        const message = this.started();
        message.content[event.index] = { ...event.content_block } as ContentBlock;
        if (TRACKS_TOOL_INPUT.has(event.content_block.type)) this.toolInputJson.set(event.index, '');
        return false;
      }
      case 'content_block_delta': {
        this.applyDelta(event.index, event.delta);
        return false;
      }
      case 'content_block_stop': {
        const json = this.toolInputJson.get(event.index);
        const block = this.started().content[event.index];
        if (json !== undefined && block && 'input' in block) {
          (block as { input: unknown }).input = json.length > 0 ? partialParse(json) : {};
          this.toolInputJson.delete(event.index);
        }
        return false;
      }
      case 'message_delta': {
        const message = this.started();
        message.stop_reason = event.delta.stop_reason;
        message.stop_sequence = event.delta.stop_sequence;
        this.usageSoFar = mergeDeltaUsage(this.usageSoFar, event.usage);
        return true;
      }
      case 'message_stop':
        this.stopped = true;
        return false;
      default:
        return false;
    }
  }

  /** The message as received so far (complete once `complete` is true). */
  result(): AssistantMessage {
    const message = this.started();
    for (const [index, json] of this.toolInputJson) {
      const block = message.content[index];
      if (block && 'input' in block) (block as { input: unknown }).input = json.length > 0 ? partialParse(json) : {};
    }
    return { ...message, content: message.content.filter((block) => block !== undefined) };
  }

  private started(): AssistantMessage {
    if (!this.message) throw new Error('stream event before message_start');
    return this.message;
  }

  private applyDelta(
    index: number,
    delta: Extract<RawMessageStreamEvent, { type: 'content_block_delta' }>['delta'],
  ): void {
    const content = this.started().content;
    const block = content[index];
    if (!block) return;
    switch (delta.type) {
      case 'text_delta':
        if (block.type === 'text') content[index] = { ...block, text: block.text + delta.text };
        return;
      case 'citations_delta':
        if (block.type === 'text')
          content[index] = { ...block, citations: [...(block.citations ?? []), delta.citation] };
        return;
      case 'thinking_delta':
        if (block.type === 'thinking') content[index] = { ...block, thinking: block.thinking + delta.thinking };
        return;
      case 'signature_delta':
        if (block.type === 'thinking') content[index] = { ...block, signature: delta.signature };
        return;
      case 'input_json_delta': {
        const json = this.toolInputJson.get(index);
        if (json !== undefined) this.toolInputJson.set(index, json + delta.partial_json);
        return;
      }
      default:
        return;
    }
  }
}

/**
 * `message_delta` usage figures are cumulative totals; absent ones keep their earlier value. The
 * 5-minute / 1-hour split of cache writes arrives with `message_start` only and is kept.
 */
function mergeDeltaUsage(previous: TokenUsage | null, delta: MessageDeltaUsage): TokenUsage {
  const base = previous ?? { input: 0, cacheWrite: 0, cacheRead: 0, output: 0 };
  const merged: TokenUsage = {
    input: delta.input_tokens ?? base.input,
    cacheWrite: delta.cache_creation_input_tokens ?? base.cacheWrite,
    cacheRead: delta.cache_read_input_tokens ?? base.cacheRead,
    output: delta.output_tokens,
  };
  const oneHour = Math.min(base.cacheWrite1h ?? 0, merged.cacheWrite);
  if (oneHour > 0) merged.cacheWrite1h = oneHour;
  return merged;
}
