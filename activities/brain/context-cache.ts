/**
 * The brain worker's per-operation cache of assembled model contexts. It only saves work: every
 * entry can be dropped at any time and rebuilt from the operation's history.
 */
import type { AssembledContext } from './context-assembly';

export type { AssembledContext } from './context-assembly';

/** A bounded, least-recently-used map from `<operationId>/<lane>` to its assembled context. */
export class ContextCache {
  private readonly entries = new Map<string, AssembledContext>();
  /** Counters for tests and the benchmark. */
  readonly stats = { hits: 0, misses: 0, rebuilds: 0 };

  constructor(private readonly maxEntries = 256) {}

  get(key: string): AssembledContext | undefined {
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  set(key: string, context: AssembledContext): void {
    this.entries.delete(key);
    this.entries.set(key, context);
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

export const contextKey = (operationId: string, lane: string): string => `${operationId}/${lane}`;
