/**
 * What identifies a model context and what extends it — the words both of the brain's context steps
 * (`model-step.ts`, the compaction step in `context.ts`) are written in. The workflow never sends
 * the conversation: it names the context the model has seen by its fingerprint and sends the new
 * user message (the tail).
 *
 * Deterministic: type-only imports.
 */
import type { ContentBlockParam } from './model-types';

/**
 * Identifies the context before the tail: its message count, the id of its last assistant message,
 * and how often it was compacted and edited (absent in steps recorded before those existed: 0).
 */
export interface ContextFingerprint {
  messages: number;
  lastReplyId: string | null;
  compactions?: number;
  edits?: number;
}

/** One block of the user message that extends a context (the goal, tool results, steering). */
export type TailBlock = ContentBlockParam;
