/**
 * A prompt-cache simulation that reports usage the way the Messages API does.
 *
 *  - An entry is the exact prefix (tools → system → messages) up to a block marked with a
 *    breakpoint; it is written only when that prefix holds at least `minCacheableTokens`.
 *  - Each breakpoint looks back up to `lookbackBlocks` blocks (itself included) for the longest
 *    prefix some earlier request wrote and that has not expired; the longest hit over all
 *    breakpoints is read (`cache_read_input_tokens`) and its TTL refreshed.
 *  - Every breakpoint past the hit whose prefix is long enough is written; the tokens from the hit
 *    up to the last written breakpoint are `cache_creation_input_tokens` (split by TTL).
 *  - `input_tokens` is the rest: the uncached part only.
 * Entries live 5 minutes, or 1 hour for `ttl: "1h"`, measured on the injected clock. Caches are
 * per model, as the API's are: a prefix written for one model is never read by another (a model
 * switch mid-conversation writes the whole prefix again).
 *
 * Beside the usage, `process` says where the prompt's uncached part came from (`CacheDetail`): the
 * longest prefix any earlier request of the model already sent (whether or not it was read back)
 * and the tail the request added after the conversation's last reply — what a reader of a long run
 * needs to tell new content from content sent again.
 */
import { createHash } from 'node:crypto';
import type { CacheTtl, PromptBlock } from './prompt';

export interface CacheSimulationOptions {
  /** Milliseconds since an epoch; defaults to `Date.now`. Tests inject a fake to expire entries. */
  clock?: () => number;
  /** Prefixes shorter than this are never written. Default 1024. */
  minCacheableTokens?: number;
  /** How many blocks each breakpoint looks back for a hit. Default 20. */
  lookbackBlocks?: number;
}

export interface CacheUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
}

/** Where a request's prompt tokens came from, besides the billed usage (for the bench's miss table). */
export interface CacheDetail {
  /**
   * Tokens of the longest prefix of this prompt that an earlier request to the same model already
   * sent, up to any block (read back or not). `seenTokens − cache_read_input_tokens` was sent before
   * and not read from the cache (no breakpoint there, beyond the lookback, expired, or too short).
   */
  seenTokens: number;
}

const TTL_MS: Record<CacheTtl, number> = { '5m': 5 * 60_000, '1h': 60 * 60_000 };

interface CacheEntry {
  ttl: CacheTtl;
  expiresAt: number;
  tokens: number;
}

export class PromptCacheSimulation {
  private readonly entries = new Map<string, CacheEntry>();
  /** Every prefix (hash) any request sent, for `CacheDetail.seenTokens`. */
  private readonly seen = new Set<string>();
  private readonly clock: () => number;
  readonly minCacheableTokens: number;
  readonly lookbackBlocks: number;

  constructor(options: CacheSimulationOptions = {}) {
    this.clock = options.clock ?? Date.now;
    this.minCacheableTokens = options.minCacheableTokens ?? 1024;
    this.lookbackBlocks = options.lookbackBlocks ?? 20;
  }

  /** Forgets every entry (a cold cache, as after a long pause), and what was sent before. */
  clear(): void {
    this.entries.clear();
    this.seen.clear();
  }

  /** Live entries: prefix length in tokens and TTL, for assertions. */
  liveEntries(): { tokens: number; ttl: CacheTtl; expiresAt: number }[] {
    const now = this.clock();
    return [...this.entries.values()].filter((entry) => entry.expiresAt > now).map((entry) => ({ ...entry }));
  }

  /** Usage of the prompt without touching the cache (for failed requests and token counting). */
  static uncached(blocks: readonly PromptBlock[]): CacheUsage {
    const total = blocks.reduce((sum, block) => sum + block.tokens, 0);
    return usage(total, 0, 0, 0);
  }

  /**
   * Looks the prompt up in `model`'s cache, writes its breakpoints, and returns the usage the API
   * would report.
   */
  process(blocks: readonly PromptBlock[], model = ''): CacheUsage {
    return this.processDetailed(blocks, model).usage;
  }

  /** `process`, with where the prompt's tokens came from. */
  processDetailed(blocks: readonly PromptBlock[], model = ''): { usage: CacheUsage; detail: CacheDetail } {
    const now = this.clock();
    const hashes = prefixHashes(blocks, model);
    const cumulative: number[] = [];
    blocks.reduce((sum, block, index) => (cumulative[index] = sum + block.tokens), 0);
    const total = cumulative[cumulative.length - 1] ?? 0;
    const breakpoints = blocks.flatMap((block, index) => (block.breakpoint ? [index] : []));

    let hit = -1;
    for (const breakpoint of breakpoints) {
      for (let index = breakpoint; index >= 0 && index > breakpoint - this.lookbackBlocks; index--) {
        const entry = this.entries.get(hashes[index]!);
        if (entry && entry.expiresAt > now) {
          hit = Math.max(hit, index);
          break;
        }
      }
    }
    const read = hit >= 0 ? cumulative[hit]! : 0;
    if (hit >= 0) {
      const entry = this.entries.get(hashes[hit]!)!;
      entry.expiresAt = now + TTL_MS[entry.ttl];
    }

    const written: Record<CacheTtl, number> = { '5m': 0, '1h': 0 };
    let writtenUpTo = read;
    for (const index of breakpoints) {
      const ttl = blocks[index]!.breakpoint!.ttl;
      const existing = this.entries.get(hashes[index]!);
      if (index <= hit) {
        if (existing && existing.expiresAt > now) existing.expiresAt = now + TTL_MS[existing.ttl];
        continue;
      }
      if (cumulative[index]! < this.minCacheableTokens) continue;
      this.entries.set(hashes[index]!, { ttl, expiresAt: now + TTL_MS[ttl], tokens: cumulative[index]! });
      written[ttl] += cumulative[index]! - writtenUpTo;
      writtenUpTo = cumulative[index]!;
    }
    const creation = written['5m'] + written['1h'];
    let seenUpTo = -1;
    hashes.forEach((hash, index) => {
      if (seenUpTo === index - 1 && this.seen.has(hash)) seenUpTo = index;
      this.seen.add(hash);
    });
    return {
      usage: usage(total - read - creation, creation, read, written['1h'], written['5m']),
      detail: { seenTokens: seenUpTo >= 0 ? cumulative[seenUpTo]! : 0 },
    };
  }
}

function usage(
  input: number,
  creation: number,
  read: number,
  creation1h: number,
  creation5m = creation - creation1h,
): CacheUsage {
  return {
    input_tokens: input,
    cache_creation_input_tokens: creation,
    cache_read_input_tokens: read,
    cache_creation: { ephemeral_5m_input_tokens: creation5m, ephemeral_1h_input_tokens: creation1h },
  };
}

/** hash[i] identifies the exact prefix blocks[0..i] for `model`. */
function prefixHashes(blocks: readonly PromptBlock[], model: string): string[] {
  const hashes: string[] = [];
  let previous = model === '' ? '' : createHash('sha256').update(`model:${model}`).digest('hex');
  for (const block of blocks) {
    previous = createHash('sha256').update(previous).update('\n').update(block.key).digest('hex');
    hashes.push(previous);
  }
  return hashes;
}
