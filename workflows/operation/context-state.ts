/**
 * The context window as the operation carries it across continue-as-new: its size, the tool results
 * it holds, its compactions and clear batches, the continuation of a cut or paused reply. What the
 * operation makes of it at each step is in `context-window.ts`.
 */
import type { CompactionReason } from '../../common/context';
import type { OperationSettings } from '../../common/operation';

/** A tool result in the context (or in the tail about to enter it). */
export interface TrackedResult {
  toolUseId: string;
  /** The model turn whose request carries it first. */
  turn: number;
  tokens: number;
  /** Tokens a stub would take off (0: not worth clearing, or nothing in the workspace to point to). */
  removable: number;
  /** Tokens the full output would have added (spilled output only). */
  spillExtra: number;
  cleared: boolean;
}

/** Carried across continue-as-new (field names are part of recorded histories: keep them). */
export interface ContextState {
  /** The model that answers (the operation's model, or the brain's default when the input names none). */
  model: string | null;
  /** Estimated prompt tokens of the context now, without the next tail. */
  tokens: number;
  /** Output tokens of the last reply: with the tail, what one turn adds (absent in older carries). */
  lastOutput?: number;
  compactions: number;
  edits: number;
  results: TrackedResult[];
  /** A compaction asked for (`agent compact`, a full window) and not yet run. */
  requested: CompactionReason | null;
  /** The next request is the first after a compaction. */
  afterCompaction: boolean;
  /** Replies continued in a row (cut at max_tokens, paused, window full). */
  continuations: number;
  /** Text of the cut or paused replies being continued: the final text starts with it. */
  partialText: string;
  /** The next request resumes a paused turn: it sends no tail. */
  resumePause: boolean;
}

export function newContextState(): ContextState {
  return {
    model: null,
    tokens: 0,
    compactions: 0,
    edits: 0,
    results: [],
    requested: null,
    afterCompaction: false,
    continuations: 0,
    partialText: '',
    resumePause: false,
  };
}

/**
 * The context state an operation starts with: empty, or — when it continues its lane's conversation
 * — the one the lane's previous operation ended with (`common/lanes.ts`), so its first checkpoint
 * plans from the context's real size and can still clear the tool results the context carries.
 */
export function startingContextState(continues: OperationSettings['continues']): ContextState {
  const state = newContextState();
  if (!continues) return state;
  return {
    ...state,
    model: continues.model ?? null,
    tokens: continues.tokens ?? 0,
    ...(continues.lastOutput !== undefined ? { lastOutput: continues.lastOutput } : {}),
    compactions: continues.compactions,
    edits: continues.edits,
    results: continues.clearable.map((result) => ({ ...result, cleared: false })),
  };
}
