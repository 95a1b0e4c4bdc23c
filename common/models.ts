/**
 * What the harness plans a context with: each model's context window, in one table beside the price
 * table (`pricing.ts`), and the token estimate used between two measured requests.
 *
 * The window is what a request's prompt must stay under; the operation compacts its context long
 * before (see `context.ts`, `compactAtPct`). An operation may override it (`context.windowTokens`),
 * e.g. for a model that is not in the table or a larger window the account has.
 *
 * Deterministic: used by workflow code.
 */

const WINDOWS: Array<{ match: RegExp; contextWindow: number }> = [
  { match: /claude-(opus|sonnet|haiku)-4/i, contextWindow: 200_000 },
  { match: /claude-(3-7-sonnet|3-5-sonnet|3-5-haiku|3-opus|3-haiku)/i, contextWindow: 200_000 },
];
/** Used for models not in the table (and the scripted model). */
export const DEFAULT_CONTEXT_WINDOW = 200_000;

/** The context window of `model` in tokens. */
export function contextWindowOf(model: string | undefined | null): number {
  return WINDOWS.find((entry) => model && entry.match.test(model))?.contextWindow ?? DEFAULT_CONTEXT_WINDOW;
}

/**
 * Characters per token of the planning estimate. Real tokenizers give ~3.5–4 characters per token
 * for English and code; the harness measures every request's prompt exactly (the API's usage) and
 * uses this only for what was added since (a tool result, a summary), where a small error matters little.
 */
export const CHARS_PER_TOKEN_ESTIMATE = 4;

export function estimateTokens(text: string | number): number {
  const chars = typeof text === 'number' ? text : text.length;
  return Math.ceil(chars / CHARS_PER_TOKEN_ESTIMATE);
}

/** Estimated tokens of a content block (text, tool_use, tool_result, thinking, or anything else as JSON). */
export function estimateBlockTokens(block: unknown): number {
  if (typeof block === 'string') return estimateTokens(block);
  if (typeof block !== 'object' || block === null) return 0;
  const b = block as Record<string, unknown>;
  switch (b.type) {
    case 'text':
      return estimateTokens(String(b.text ?? ''));
    case 'tool_use':
      return estimateTokens(String(b.name ?? '') + JSON.stringify(b.input ?? {}));
    case 'tool_result': {
      const content = b.content;
      if (typeof content === 'string') return estimateTokens(content);
      if (Array.isArray(content)) return content.reduce((sum: number, inner) => sum + estimateBlockTokens(inner), 0);
      return 0;
    }
    case 'thinking':
      return estimateTokens(String(b.thinking ?? ''));
    default: {
      const { cache_control: _mark, ...rest } = b;
      return estimateTokens(JSON.stringify(rest));
    }
  }
}

/** Estimated tokens of a list of messages (their blocks; string content as one text block). */
export function estimateMessagesTokens(messages: ReadonlyArray<{ content: unknown }>): number {
  let total = 0;
  for (const message of messages) {
    if (typeof message.content === 'string') total += estimateTokens(message.content);
    else if (Array.isArray(message.content)) for (const block of message.content) total += estimateBlockTokens(block);
  }
  return total;
}
