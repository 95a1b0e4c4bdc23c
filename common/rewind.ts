/**
 * Rewind: `agent rewind <operation> --to-turn N` (workflow `rewind`) goes back to turn N of an
 * operation — its conversation and its workspace — as a fork, leaving the original untouched:
 *
 *  1. `planRewind` (brain) reads the operation's history: turn N's model step, the checkpoint at or
 *     before it (`common/checkpoints.ts`), the answers to turn N's tool calls, the settings;
 *  2. `restoreCheckpoint` (on the hands host holding the checkpoint) makes a new session's workspace
 *     volume from it;
 *  3. only then the new session starts (`common/session-fork.ts`) with a lane whose first request is
 *     the original's request N, its reply N and the answers to its tool calls — an exact prefix of
 *     the original's conversation, so the prompt cache still hits — then the new prompt.
 *
 * A worker killed at any point leaves no new session (before 3) or a whole one: the restore is
 * idempotent and nothing depends on it until it has completed. `codeOnly` restores the workspace
 * into a new session without the conversation.
 *
 * Deterministic (imported by workflow code): zod and types only.
 */
import { z } from 'zod';
import type { CheckpointKind } from './checkpoints';
import type { LaneContinuation } from './lanes';
import { laneNameSchema, SUBAGENT_LANE_PREFIX } from './lanes';
import { TEXT_INPUT_MAX_BYTES } from './operation';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from './sandbox-names';
import type { OperationDefaults } from './session';
import { describeZodError, utf8Bytes } from './validation';

export const REWIND_WORKFLOW_TYPE = 'rewind';
const REWIND_PREFIX = 'rewind-';

/** The rewind workflow of the session it makes. */
export const rewindWorkflowId = (sessionId: string): string => `${REWIND_PREFIX}${sessionId}`;
/** The session a rewind workflow makes, from its workflow id (its default). */
export function sessionIdOfRewind(workflowId: string): string | undefined {
  return workflowId.startsWith(REWIND_PREFIX) ? workflowId.slice(REWIND_PREFIX.length) : undefined;
}

export const rewindInputSchema = z.strictObject({
  /** The operation to go back in (any operation: of a session, a lane's, started alone). */
  operationId: z.string().min(1).max(200),
  /** The turn whose conversation and workspace the new lane starts from (1 = after the first reply). */
  toTurn: z.int({ error: 'must be a turn number (a whole number)' }).min(1, 'must be 1 or more'),
  /** The new session (default: from the workflow id `rewind-<sessionId>`). */
  sessionId: z.string().regex(SESSION_ID_PATTERN, `must be ${SESSION_ID_RULE}`).optional(),
  /** The new lane (default: the operation's lane; `main` for a subagent's). */
  lane: laneNameSchema
    .refine((lane) => !lane.startsWith(SUBAGENT_LANE_PREFIX), `must not start with "${SUBAGENT_LANE_PREFIX}"`)
    .optional(),
  /** The new lane's first prompt (without it the lane waits for `agent run --session … --lane …`). */
  prompt: z
    .string()
    .trim()
    .min(1, 'must be a non-empty string')
    .refine((text) => utf8Bytes(text) <= TEXT_INPUT_MAX_BYTES, `must be at most ${TEXT_INPUT_MAX_BYTES} bytes`)
    .optional(),
  /** Restore the workspace alone: the new session's lane starts a fresh context. */
  codeOnly: z.boolean().default(false),
});
export type RewindInput = z.input<typeof rewindInputSchema>;
export type RewindSettings = z.output<typeof rewindInputSchema>;

export function parseRewindInput(raw: unknown): { ok: true; value: RewindSettings } | { ok: false; error: string } {
  const result = rewindInputSchema.safeParse(raw);
  return result.success ? { ok: true, value: result.data } : { ok: false, error: describeZodError(result.error, raw) };
}

/** The workflow's result; `agent rewind --json` prints `{sessionId, lane, operationId}` of it. */
export interface RewindResult {
  sessionId: string;
  lane: string;
  /** The lane's first operation (null without a prompt). */
  operationId: string | null;
  /** Where it came from. */
  from: { sessionId: string; operationId: string; turn: number };
  /** The checkpoint the workspace was restored from. */
  checkpoint: { turn: number; kind: CheckpointKind; commit: string };
  /** Files written into the new workspace. */
  files: number;
  workspaceVolume: string;
}

export interface PlanRewindInput {
  operationId: string;
  toTurn: number;
  codeOnly: boolean;
}

/** What the history says a rewind needs (`planRewind`). */
export interface RewindPlan {
  from: { sessionId: string; operationId: string; lane: string; turn: number };
  /** The checkpoint to restore, and the hands host queue it was recorded on. */
  checkpoint: { turn: number; kind: CheckpointKind; commit: string; taskQueue: string };
  /** The conversation after turn N (absent for `codeOnly`). */
  continues?: LaneContinuation;
  /** The operation's settings, for every operation of the new session. */
  defaults: OperationDefaults;
  /** The shared hands queue of the original operation (absent: the default). */
  handsTaskQueue?: string;
}

export interface RewindActivities {
  /** Reads the operation's history into a plan; fails, not retried, when it cannot be rewound there. */
  planRewind(input: PlanRewindInput): Promise<RewindPlan>;
}

export const PLAN_REWIND_ACTIVITY = 'planRewind';

/** The `type` of the failures a rewind ends with when the operation cannot be rewound as asked. */
export const REWIND_FAILURE_TYPES = {
  invalidInput: 'InvalidRewindInput',
  unknownOperation: 'UnknownOperation',
  /** The operation has no such turn (yet). */
  noSuchTurn: 'NoSuchTurn',
  /** No checkpoint covers the turn (checkpoints were off, skipped, or the operation never changed files). */
  noCheckpoint: 'NoCheckpoint',
} as const;
