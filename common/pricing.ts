/**
 * Token prices, in US dollars per million tokens, kept in this one file (the context window of each
 * model is beside it, in `models.ts`). Cache writes are priced at 1.25× base input with the 5-minute
 * TTL and 2× with the 1-hour TTL, cache reads at 0.1×. Deterministic: used by workflow code and the
 * benchmark.
 */
import type { TokenUsage } from './model-types';

export interface ModelPrice {
  input: number;
  output: number;
}

const PRICES: Array<{ match: RegExp; price: ModelPrice }> = [
  { match: /opus/i, price: { input: 15, output: 75 } },
  { match: /haiku/i, price: { input: 0.8, output: 4 } },
  { match: /sonnet/i, price: { input: 3, output: 15 } },
];
/** Used for models not in the table (and the scripted model). */
export const DEFAULT_PRICE: ModelPrice = { input: 3, output: 15 };
/** 5-minute cache writes. */
export const CACHE_WRITE_MULTIPLIER = 1.25;
export const CACHE_WRITE_1H_MULTIPLIER = 2;
export const CACHE_READ_MULTIPLIER = 0.1;

export function priceOf(model: string | undefined | null): ModelPrice {
  return PRICES.find((entry) => model && entry.match.test(model))?.price ?? DEFAULT_PRICE;
}

/** What the prompt part of `usage` costs, in base-input-token equivalents. */
export function promptInputEquivalent(usage: TokenUsage): number {
  const oneHour = usage.cacheWrite1h ?? 0;
  return (
    usage.input +
    (usage.cacheWrite - oneHour) * CACHE_WRITE_MULTIPLIER +
    oneHour * CACHE_WRITE_1H_MULTIPLIER +
    usage.cacheRead * CACHE_READ_MULTIPLIER
  );
}

export function costUsd(usage: TokenUsage, model?: string | null): number {
  const price = priceOf(model);
  return (promptInputEquivalent(usage) * price.input + usage.output * price.output) / 1_000_000;
}
