/**
 * Token prices, in US dollars per million tokens, kept in this one file. Cache writes are priced at
 * 1.25× base input (5-minute TTL), cache reads at 0.1×. Deterministic: used by workflow code and the
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
export const CACHE_WRITE_MULTIPLIER = 1.25;
export const CACHE_READ_MULTIPLIER = 0.1;

export function priceOf(model: string | undefined): ModelPrice {
  return PRICES.find((entry) => model && entry.match.test(model))?.price ?? DEFAULT_PRICE;
}

export function costUsd(usage: TokenUsage, model?: string): number {
  const price = priceOf(model);
  const inputEquivalent =
    usage.input + usage.cacheWrite * CACHE_WRITE_MULTIPLIER + usage.cacheRead * CACHE_READ_MULTIPLIER;
  return (inputEquivalent * price.input + usage.output * price.output) / 1_000_000;
}
