/**
 * The project's search attributes on a namespace, through the operator service: which are there,
 * which are missing, which exist with another type, and registering the missing ones. Used by
 * `agent setup` and `agent doctor`; works on any Temporal cluster that allows the operator service
 * (Temporal Cloud registers search attributes through its own API: see docs/production.md).
 */
import type { Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';

export interface SearchAttributeState {
  present: string[];
  missing: string[];
  /** `AgentX is Text, expected Keyword`. */
  conflicts: string[];
}

export async function searchAttributeState(connection: Connection, namespace: string): Promise<SearchAttributeState> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const have: Record<string, unknown> = { ...existing.systemAttributes, ...existing.customAttributes };
  const state: SearchAttributeState = { present: [], missing: [], conflicts: [] };
  for (const key of Object.values(SEARCH_ATTRIBUTES)) {
    const wanted = encodeSearchAttributeIndexedValueType(key.type);
    if (!(key.name in have)) state.missing.push(key.name);
    else if (have[key.name] !== wanted) state.conflicts.push(`${key.name} has another type (expected ${key.type})`);
    else state.present.push(key.name);
  }
  return state;
}

/** Registers the missing attributes; returns their names. Idempotent. */
export async function registerSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const { missing } = await searchAttributeState(connection, namespace);
  if (missing.length === 0) return [];
  const byName = new Map(Object.values(SEARCH_ATTRIBUTES).map((key) => [key.name, key] as const));
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.flatMap((name) => {
        const type = encodeSearchAttributeIndexedValueType(byName.get(name)!.type);
        return type === undefined ? [] : [[name, type] as const];
      }),
    ),
  });
  return missing;
}

export const SETUP_HINT = 'run `agent setup` (it registers them on this namespace)';
