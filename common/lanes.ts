/**
 * What links an operation to its session and lane: lane names, the continuation of a lane's
 * conversation, the session that owns the operation's sandbox, subagent lineage and limits, and the
 * signals operations and their session exchange. The session contract itself is `session.ts`.
 *
 * Deterministic (imported by workflow code): zod and Temporal definitions only.
 */
import { defineSignal } from '@temporalio/workflow';
import { z } from 'zod';
import type { ToolResultBlockParam } from './model-types';

/** Lane names: 1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit. */
export const LANE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
export const LANE_NAME_RULE = "1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit";
/** Lanes the harness forks for subagents: `subagent:<toolCallId>`; prompts cannot name them. */
export const SUBAGENT_LANE_PREFIX = 'subagent:';
export const DEFAULT_LANE = 'main';

export const laneNameSchema = z.string().regex(LANE_NAME_PATTERN, `must be ${LANE_NAME_RULE}`);

export const subagentLaneOf = (toolCallId: string): string => `${SUBAGENT_LANE_PREFIX}${toolCallId}`;
/** The workflow id of the subagent operation a `task` call starts. */
export const subagentOperationIdOf = (parentOperationId: string, toolCallId: string): string =>
  `${parentOperationId}.${toolCallId}`;

const toolResultShape = z.looseObject({ type: z.literal('tool_result'), tool_use_id: z.string().min(1) });
const toolResultBlock = z.custom<ToolResultBlockParam>(
  (value) => toolResultShape.safeParse(value).success,
  'must be a tool_result block with a tool_use_id',
);

/**
 * Where an operation's context starts when it continues its lane's conversation: the operation
 * whose history holds the lane's last reply, the fingerprint of that context, and the answers to
 * any `tool_use` blocks that reply left open (they head the new operation's first message).
 */
export const laneContinuationSchema = z.strictObject({
  operationId: z.string().min(1),
  messages: z.int().min(0),
  lastReplyId: z.string().min(1).nullable(),
  openToolResults: z.array(toolResultBlock).default([]),
});
export interface LaneContinuation {
  operationId: string;
  messages: number;
  lastReplyId: string | null;
  openToolResults: ToolResultBlockParam[];
}

/** Set on operations a session runs: the session owns their sandbox and serialises its use. */
export const sessionLinkSchema = z.strictObject({ workflowId: z.string().min(1) });
export type SessionLink = z.output<typeof sessionLinkSchema>;

/** Set on subagent operations: how deep they are and which `task` call started them. */
export const lineageSchema = z.strictObject({
  depth: z.int().min(1).max(10),
  parentOperationId: z.string().min(1),
  parentLane: z.string().min(1),
  toolCallId: z.string().min(1),
});
export type Lineage = z.output<typeof lineageSchema>;

/** Limits on the `task` tool: how deep subagents may nest and how many one operation may start. */
export const subagentLimitsSchema = z.strictObject({
  maxDepth: z.int().min(0).max(5).default(2),
  maxPerOperation: z.int().min(0).max(100).default(10),
});
export type SubagentLimits = z.output<typeof subagentLimitsSchema>;

// ---- Signals between a session and its operations (all durable; each names its operation) ----

/** Operation → session: asks for (`request`) or gives back (`release`) the session's sandbox. */
export const sandboxLeaseSignal =
  defineSignal<[{ operationId: string; action: 'request' | 'release' }]>('sandboxLease');
/** Session → operation: the sandbox is yours until you release it. */
export const sandboxLeaseGrantedSignal = defineSignal<[]>('sandboxLeaseGranted');
/** Session → operation: another lane waits; release the sandbox after the current tool call. */
export const sandboxLeaseYieldSignal = defineSignal<[]>('sandboxLeaseYield');

export interface LaneForked {
  lane: string;
  operationId: string;
  parentOperationId: string;
  parentLane: string;
  toolCallId: string;
  description: string;
}
/** Operation → session: a `task` call forked a subagent lane and is starting its operation. */
export const laneForkedSignal = defineSignal<[LaneForked]>('laneForked');
/** Operation → session: a subagent operation ended. */
export const forkEndedSignal = defineSignal<[{ operationId: string; state: string; reason: string }]>('forkEnded');
/** Operation → session: an abort was accepted; the lane's queued follow-ups are cancelled. */
export const operationAbortingSignal = defineSignal<[{ operationId: string; reason: string }]>('operationAborting');

/** Session → operation: a global fact changed; it joins the context's tail at the next checkpoint. */
export const sessionFactSignal = defineSignal<[{ key: string; value: string; seq: number }]>('sessionFact');

/** How a fact enters a context (one text block). */
export const factNote = (key: string, value: string): string => `[session fact] ${key} = ${value}`;
