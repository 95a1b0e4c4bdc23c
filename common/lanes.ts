/**
 * What links an operation to its session and lane: lane names, the continuation of a lane's
 * conversation, the session that owns the operation's sandbox, subagent lineage and limits, and the
 * signals operations and their session exchange. The session contract itself is `session.ts`.
 *
 * Deterministic (imported by workflow code): zod and Temporal definitions only.
 */
import { defineSignal } from '@temporalio/workflow';
import { z } from 'zod';
import type { HandsHost } from './hands-route';
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
 * A tool result the lane's context still carries in full and a later clear batch may replace by a
 * stub (`common/context.ts`): what the next operation needs to keep editing the context it
 * continues. `turn` counts from the end of the operation that reported it (its last request is
 * turn 0, the next operation's first request turn 1).
 */
export const clearableResultSchema = z.strictObject({
  toolUseId: z.string().min(1),
  turn: z.int().max(1),
  tokens: z.int().min(0),
  removable: z.int().min(0),
  spillExtra: z.int().min(0),
});
export type ClearableResult = z.output<typeof clearableResultSchema>;

/** Most clearable results a lane's context hands on (the newest are kept). */
export const LANE_CLEARABLE_RESULTS_MAX = 500;

/**
 * The context an operation ended with: its fingerprint (`ContextFingerprint`: messages, last reply,
 * compactions, clear batches — all counted over the lane's whole context) and what the context
 * window bookkeeping needs to go on from there (its estimated size, the model that measured it,
 * the tool results it may still clear). Fields after `lastReplyId` are absent in contexts recorded
 * before context management.
 */
const laneContextShape = {
  messages: z.int().min(0),
  lastReplyId: z.string().min(1).nullable(),
  compactions: z.int().min(0).default(0),
  edits: z.int().min(0).default(0),
  /** Estimated prompt tokens of the context (without the next tail). */
  tokens: z.int().min(0).optional(),
  /** Output tokens of the last reply (what one turn adds, with the tail). */
  lastOutput: z.int().min(0).optional(),
  model: z.string().min(1).nullable().optional(),
  clearable: z.array(clearableResultSchema).max(LANE_CLEARABLE_RESULTS_MAX).default([]),
};
export const laneContextSchema = z.strictObject(laneContextShape);
export type LaneContext = z.input<typeof laneContextSchema>;

/**
 * Where an operation's context starts when it continues its lane's conversation: the operation
 * whose history holds the lane's last reply (or its last compaction), that context, and the answers
 * to any `tool_use` blocks the last reply left open (they head the new operation's first message).
 */
export const laneContinuationSchema = z.strictObject({
  operationId: z.string().min(1),
  ...laneContextShape,
  openToolResults: z.array(toolResultBlock).default([]),
});
export type LaneContinuation = z.input<typeof laneContinuationSchema> & { openToolResults: ToolResultBlockParam[] };

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

/**
 * Operation → session: asks for (`request`) or gives back (`release`) the session's sandbox. A
 * release says which hands host holds the workspace now (`null`: none chosen, or given up), so the
 * next holder goes there (absent in signals recorded before hands routing).
 */
export const sandboxLeaseSignal =
  defineSignal<[{ operationId: string; action: 'request' | 'release'; handsHost?: HandsHost | null }]>('sandboxLease');
/**
 * Session → operation: the sandbox is yours until you release it; its workspace is on `handsHost`
 * when the session knows the host (absent: claim one).
 */
export const sandboxLeaseGrantedSignal = defineSignal<[{ handsHost?: HandsHost }?]>('sandboxLeaseGranted');
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
