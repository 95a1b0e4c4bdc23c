/**
 * Prompt-cache breakpoints. The API caches the exact prefix (tools → system → messages) up to each
 * block marked with `cache_control`, at most 4 marks per request. This module owns every mark:
 * callers never place their own, so marks cannot pile up as a conversation is re-sent.
 *
 * Placed (each only where there is such a block):
 *  1. the last tool definition: tools rarely change, so their prefix survives system-prompt edits;
 *  2. the last system block: the tools + system prefix shared by every turn of a session;
 *  3. the last cacheable block of the last message: the moving tail. The next request re-sends this
 *     exact prefix and reads it back (the API looks back ~20 blocks from its own tail breakpoint),
 *     then writes the new tail;
 *  4. with context editing, the block just before the edit frontier (the oldest tool result a later
 *     clear batch may replace): everything before it stays cached across the batch, so a batch
 *     rewrites the cache only from the frontier on — without it, no cached prefix would end
 *     between the stable part and the first cleared result, and a batch would rewrite it all.
 * That is at most 4 breakpoints, the API's limit.
 *
 * A request that carries a clear batch needs two marks in the middle: one where its cached prefix
 * ends — just before the first result it clears, the frontier every request since the previous
 * batch has marked, so it is read back — and one at the new frontier, so that the next batch finds
 * its prefix written. The API looks back only ~20 blocks from each mark and a batch clears far
 * more than that, so one mark cannot do both. That request leaves the tools' mark out: the system
 * prompt's mark covers the same prefix (the tools come first), and neither changes mid-operation.
 */
import type {
  CacheControlEphemeral,
  ContentBlockParam,
  MessageCreateParamsBase,
  MessageParam,
  TextBlockParam,
  Tool,
} from '@anthropic-ai/sdk/resources/messages';
import type { PromptCacheTtl } from '../../common/model-types';

export const MAX_CACHE_BREAKPOINTS = 4;

export type CacheableParams = Pick<MessageCreateParamsBase, 'messages' | 'system' | 'tools' | 'cache_control'>;

function cacheControl(ttl: PromptCacheTtl): CacheControlEphemeral {
  return ttl === '5m' ? { type: 'ephemeral' } : { type: 'ephemeral', ttl };
}

/** Blocks the API refuses to mark: thinking blocks, and empty text. */
function canCarryCacheControl(block: ContentBlockParam): boolean {
  if (block.type === 'thinking' || block.type === 'redacted_thinking') return false;
  if (block.type === 'text' && block.text.length === 0) return false;
  return true;
}

function withoutCacheControl<T extends object>(block: T): T {
  if (!('cache_control' in block)) return block;
  const { cache_control: _dropped, ...rest } = block as T & { cache_control?: unknown };
  return rest as T;
}

function marked<T extends object>(block: T, control: CacheControlEphemeral): T {
  return { ...block, cache_control: control };
}

/**
 * A copy of `params` with every existing mark removed and the harness's breakpoints placed;
 * `editFrontier` is the `tool_use_id` of the oldest tool result a later clear batch may replace,
 * `clearedFrom` that of the first tool result this request's clear batch replaced.
 */
export function placeCacheBreakpoints<P extends CacheableParams>(
  params: P,
  ttl: PromptCacheTtl,
  editFrontier?: string,
  clearedFrom?: string,
): P {
  const stripped = stripCacheBreakpoints(params);
  const control = cacheControl(ttl);
  const parts = markedParts(stripped, control);
  let messages = parts.messages ?? stripped.messages;
  if (clearedFrom !== undefined) {
    const withReadPoint = markBeforeToolResult(messages, clearedFrom, control);
    if (withReadPoint !== messages) {
      messages = withReadPoint;
      if (parts.system !== undefined) delete parts.tools;
    }
  }
  if (editFrontier !== undefined) messages = markBeforeToolResult(messages, editFrontier, control);
  return { ...stripped, ...parts, messages };
}

/** Marks the last block that can carry a mark before the `tool_result` answering `toolUseId` (if it is there). */
function markBeforeToolResult(
  messages: MessageParam[],
  toolUseId: string,
  control: CacheControlEphemeral,
): MessageParam[] {
  const isFrontier = (block: ContentBlockParam) => block.type === 'tool_result' && block.tool_use_id === toolUseId;
  const at = messages.findIndex((message) => typeof message.content !== 'string' && message.content.some(isFrontier));
  if (at < 0) return messages;
  for (let m = at; m >= 0; m--) {
    const message = messages[m]!;
    const blocks: ContentBlockParam[] =
      typeof message.content === 'string'
        ? message.content.length > 0
          ? [{ type: 'text', text: message.content }]
          : []
        : [...message.content];
    const start = m === at ? blocks.findIndex(isFrontier) - 1 : blocks.length - 1;
    for (let b = start; b >= 0; b--) {
      const block = blocks[b]!;
      if (!canCarryCacheControl(block)) continue;
      if ((block as { cache_control?: unknown }).cache_control != null) return messages;
      blocks[b] = marked(block, control);
      const result = [...messages];
      result[m] = { ...message, content: blocks } as MessageParam;
      return result;
    }
  }
  return messages;
}

/** A copy of `params` without any `cache_control` (for `promptCache: false`). */
export function stripCacheBreakpoints<P extends CacheableParams>(params: P): P {
  const { cache_control: _topLevel, ...rest } = params;
  const stripped = { ...rest } as P;
  if (params.tools) stripped.tools = params.tools.map((tool) => withoutCacheControl(tool));
  if (Array.isArray(params.system)) stripped.system = params.system.map((block) => withoutCacheControl(block));
  stripped.messages = params.messages.map((message) =>
    typeof message.content === 'string'
      ? message
      : ({ ...message, content: message.content.map((block) => withoutCacheControl(block)) } as MessageParam),
  );
  return stripped;
}

function markedParts(params: CacheableParams, control: CacheControlEphemeral): Partial<CacheableParams> {
  const parts: Partial<CacheableParams> = {};
  const tools = params.tools;
  if (tools && tools.length > 0) {
    parts.tools = tools.map((tool, index) => (index === tools.length - 1 ? marked(tool as Tool, control) : tool));
  }
  const system = params.system;
  if (typeof system === 'string' && system.length > 0) {
    parts.system = [{ type: 'text', text: system, cache_control: control }];
  } else if (Array.isArray(system) && system.length > 0) {
    const last = system.length - 1;
    parts.system = system.map((block: TextBlockParam, index) =>
      index === last && block.text.length > 0 ? marked(block, control) : block,
    );
  }
  parts.messages = markTail(params.messages, control);
  return parts;
}

/** Marks the last block of the conversation that can carry a mark (searching back from the end). */
function markTail(messages: MessageParam[], control: CacheControlEphemeral): MessageParam[] {
  const result = [...messages];
  for (let m = result.length - 1; m >= 0; m--) {
    const message = result[m]!;
    const blocks: ContentBlockParam[] =
      typeof message.content === 'string'
        ? message.content.length > 0
          ? [{ type: 'text', text: message.content }]
          : []
        : [...message.content];
    for (let b = blocks.length - 1; b >= 0; b--) {
      if (!canCarryCacheControl(blocks[b]!)) continue;
      blocks[b] = marked(blocks[b]!, control);
      result[m] = { ...message, content: blocks } as MessageParam;
      return result;
    }
  }
  return result;
}

/** How many `cache_control` marks a request carries (tools, system, message blocks, top level). */
export function countCacheBreakpoints(params: CacheableParams): number {
  const has = (value: unknown): number =>
    typeof value === 'object' && value !== null && (value as { cache_control?: unknown }).cache_control != null ? 1 : 0;
  let count = params.cache_control != null ? 1 : 0;
  for (const tool of params.tools ?? []) count += has(tool);
  if (Array.isArray(params.system)) for (const block of params.system) count += has(block);
  for (const message of params.messages) {
    if (typeof message.content !== 'string') for (const block of message.content) count += has(block);
  }
  return count;
}
