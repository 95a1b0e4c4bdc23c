/**
 * Live events: what a follower of a running operation sees as it happens — the model's text as it
 * streams, each tool call as it starts and ends, approvals, the end. They travel through the
 * operation's Workflow Stream (`@temporalio/workflow-streams`: published by the model-step activity
 * as signals, by the workflow in memory; read by followers with a long-polling Update), never
 * through a broker. They are a view for people: the session log (`agent events`) is the history.
 *
 * Text deltas carry the model attempt and their offset in that attempt's text, so a follower can
 * show a retried attempt without repeating what it already showed (`client/live.ts`). A reply that
 * arrives within a second is not streamed at all (no history cost): its text comes with
 * `model.reply`.
 *
 * Deterministic: types and constants only (imported by workflow code).
 */
import type { TokenUsage } from './model-types';

/** The stream topic every live event is published on. */
export const LIVE_TOPIC = 'live';
/** How long a model step buffers text before it starts streaming it (a quick reply is never streamed). */
export const LIVE_TEXT_DELAY_MS = 1_000;
/** How often a streaming model step sends its buffered text. */
export const LIVE_TEXT_BATCH_MS = 1_000;

interface LiveBase {
  operationId: string;
  /** The model turn the event belongs to (1-based). */
  turn: number;
}

export type LiveEvent =
  | (LiveBase & { kind: 'model.delta'; attempt: number; offset: number; text: string })
  | (LiveBase & { kind: 'model.reply'; text: string; toolCalls: number; usage: TokenUsage })
  | (LiveBase & { kind: 'tool.started'; toolCallId: string; name: string; summary: string })
  | (LiveBase & { kind: 'tool.finished'; toolCallId: string; name: string; isError: boolean; excerpt: string })
  | (LiveBase & { kind: 'approval.requested'; toolCallId: string; summary: string; timeoutAt: string })
  | (LiveBase & { kind: 'approval.decided'; toolCallId: string; decision: 'approved' | 'denied'; by: string })
  | (LiveBase & { kind: 'operation.ended'; state: string; reason: string })
  /** The workspace's environment image is being built (`building environment <hash>: step 3/5 …`). */
  | (LiveBase & { kind: 'environment.progress'; line: string; tail: string[] });

/** At most this much of a tool result goes into `tool.finished`. */
export const LIVE_EXCERPT_CHARS = 400;
