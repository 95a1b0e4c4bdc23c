/**
 * The prompt of a request as the prompt cache sees it: a flat list of blocks in prefix order
 * (tools → system → messages), each with its token estimate, a canonical key and, where the
 * request marked it, a cache breakpoint. String content counts as one text block, and
 * `cache_control` is not part of a block's identity, so moving a breakpoint keeps the prefix equal.
 */
import { blockTokens, textTokens, toolTokens } from './token-estimate';
import type { MessagesRequestBody } from './validation';

export type CacheTtl = '5m' | '1h';

export interface PromptBlock {
  /** Canonical identity of the block at its place (section, message index and role included). */
  key: string;
  tokens: number;
  /** Present when the request put `cache_control` on this block. */
  breakpoint?: { ttl: CacheTtl };
}

type Json = Record<string, unknown>;

/** JSON with object keys sorted, so key order never changes a block's identity. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return inner;
    const sorted: Json = {};
    for (const key of Object.keys(inner).sort()) sorted[key] = (inner as Json)[key];
    return sorted;
  });
}

export function withoutCacheControl(block: Json): Json {
  const { cache_control: _ignored, ...rest } = block;
  return rest;
}

/** Content as blocks: a string becomes one text block (empty string: no block). */
export function contentBlocks(content: unknown): Json[] {
  if (typeof content === 'string') return content.length > 0 ? [{ type: 'text', text: content }] : [];
  return Array.isArray(content) ? (content as Json[]) : [];
}

/** Messages with string content as blocks and without `cache_control`: what prefix checks compare. */
export function normalizedMessages(messages: readonly unknown[]): Json[] {
  return messages.map((message) => {
    const { role, content } = message as Json;
    return { role, content: contentBlocks(content).map(withoutCacheControl) };
  });
}

function breakpointOf(block: Json): PromptBlock['breakpoint'] {
  const control = block.cache_control as Json | undefined | null;
  if (!control) return undefined;
  return { ttl: control.ttl === '1h' ? '1h' : '5m' };
}

export function promptBlocks(body: MessagesRequestBody): PromptBlock[] {
  const blocks: PromptBlock[] = [];
  for (const tool of (body.tools ?? []) as Json[]) {
    blocks.push({
      key: `tool:${canonicalJson(withoutCacheControl(tool))}`,
      tokens: toolTokens(tool),
      breakpoint: breakpointOf(tool),
    });
  }
  const system = body.system;
  if (typeof system === 'string') {
    if (system.length > 0)
      blocks.push({ key: `system:${canonicalJson({ type: 'text', text: system })}`, tokens: textTokens(system) });
  } else if (Array.isArray(system)) {
    for (const block of system as Json[]) {
      blocks.push({
        key: `system:${canonicalJson(withoutCacheControl(block))}`,
        tokens: blockTokens(block),
        breakpoint: breakpointOf(block),
      });
    }
  }
  body.messages.forEach((message, index) => {
    for (const block of contentBlocks(message.content)) {
      blocks.push({
        key: `message:${index}:${message.role}:${canonicalJson(withoutCacheControl(block))}`,
        tokens: blockTokens(block),
        breakpoint: breakpointOf(block),
      });
    }
  });
  // Top-level `cache_control`: the API places the breakpoint on the last block itself.
  const automatic = breakpointOf(body as unknown as Json);
  const last = blocks[blocks.length - 1];
  if (automatic && last && !last.breakpoint) last.breakpoint = automatic;
  return blocks;
}
