/**
 * The typed event log of a session: one view over the Temporal histories of the session workflow
 * and all its operations (subagents included), across continue-as-new — built from history alone
 * (`client/session-events.ts`), so nothing is kept twice and nothing is lost to a compacted context.
 *
 * Deterministic: types and pure helpers only.
 */

export const EVENT_TYPES = [
  /** A prompt was accepted by the session (`data.state`: started or queued). */
  'prompt.accepted',
  /** An operation's workflow started (a lane's operation, or a subagent's). */
  'operation.started',
  /** A model turn's reply: its text, tool calls, stop reason and usage. */
  'model.reply',
  /** The context was compacted (a recorded compaction step): why, how much it replaced, the summary. */
  'context.compacted',
  /** A tool call's intent was recorded (its activity or subagent scheduled). */
  'tool.started',
  /** A tool call's result was recorded. */
  'tool.finished',
  'steering.accepted',
  'abort.accepted',
  'approval.requested',
  'approval.decided',
  /** A hook ran and decided (`common/hooks.ts`): its event, the hook, its decision and why. */
  'hook.decided',
  'fact.set',
  /** A `task` call forked a subagent lane. */
  'lane.forked',
  /** An operation reached its terminal state. */
  'operation.ended',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface SessionEvent {
  /** Position in the session log (1-based), ordered by the time each event was recorded. */
  seq: number;
  /** When Temporal recorded it (ISO 8601). */
  at: string;
  type: EventType;
  sessionId: string;
  /** The lane, or null for session-wide events (facts). */
  lane: string | null;
  operationId: string | null;
  /** The model turn of the operation the event belongs to. */
  turn?: number;
  data: Record<string, unknown>;
}

export interface EventFilter {
  /** Lowest and highest `seq` (inclusive). */
  from?: number;
  to?: number;
  /** Types to keep: exact (`tool.finished`) or a family (`tool`). */
  types?: string[];
  lane?: string;
  operationId?: string;
}

/** Why a `--type` value names no event type, or undefined. */
export function unknownEventType(type: string): string | undefined {
  if (EVENT_TYPES.some((known) => known === type || known.startsWith(`${type}.`))) return undefined;
  return `unknown event type "${type}" (types: ${EVENT_TYPES.join(', ')})`;
}

export function matchesFilter(event: SessionEvent, filter: EventFilter): boolean {
  if (filter.from !== undefined && event.seq < filter.from) return false;
  if (filter.to !== undefined && event.seq > filter.to) return false;
  if (filter.lane !== undefined && event.lane !== filter.lane) return false;
  if (filter.operationId !== undefined && event.operationId !== filter.operationId) return false;
  if (filter.types?.length && !filter.types.some((t) => event.type === t || event.type.startsWith(`${t}.`))) {
    return false;
  }
  return true;
}
