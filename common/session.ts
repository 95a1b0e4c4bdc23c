/**
 * The session contract. A session (workflow `session`, id `session-<sessionId>`) is the single writer
 * of a conversation's state: its lanes, the index of its operations, its global facts and its
 * sandbox (one workspace per session). Operations are its child workflows.
 *
 *  - A prompt is accepted durably by the `prompt` Update (usually sent with Update-with-Start, which
 *    creates the session on first use). Its validator rejects bad input with a message naming the
 *    field; its result is the operation id once the operation has started — or, when the lane is
 *    busy, once the prompt is queued as a follow-up.
 *  - Lanes are named and created on first use. A lane has at most one open operation; lanes run in
 *    parallel. A lane's next operation continues its conversation (the first request extends the
 *    previous one's last request as an exact prefix) unless the prompt asks for a `newContext`.
 *  - Facts: `setFact` (last write wins; earlier values stay in the history), read by the `session`
 *    query. A changed fact joins each lane's context at its tail at the next checkpoint.
 *
 * Deterministic (imported by workflow code): zod and Temporal definitions only.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import { DEFAULT_LANE, laneNameSchema, SUBAGENT_LANE_PREFIX } from './lanes';
import type { TokenUsage } from './model-types';
import { operationInputSchema, repoSource, TEXT_INPUT_MAX_BYTES, type OperationEndState } from './operation';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from './sandbox-names';
import { sessionForkSchema, type RewoundFrom } from './session-fork';
import { describeZodError, utf8Bytes } from './validation';

export const SESSION_WORKFLOW_TYPE = 'session';
const SESSION_PREFIX = 'session-';

export const sessionWorkflowId = (sessionId: string): string => `${SESSION_PREFIX}${sessionId}`;
/** The session id of a session workflow id, or undefined for another workflow id. */
export function sessionIdOfWorkflow(workflowId: string): string | undefined {
  return workflowId.startsWith(SESSION_PREFIX) ? workflowId.slice(SESSION_PREFIX.length) : undefined;
}
/** The id the session gives its n-th operation (1-based) unless the prompt names one. */
export const sessionOperationId = (sessionId: string, n: number): string => `op-${sessionId}.${n}`;

/** Operation ids a prompt may choose: like session ids, and never a session workflow's id. */
const OPERATION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

const op = operationInputSchema.shape;

/**
 * Operation settings a session applies to every operation unless the prompt overrides them. Without
 * the operation's defaults: a field the prompt leaves out takes the session's value, and one neither
 * gives takes the operation's default (`common/operation.ts`).
 */
export const operationDefaultsSchema = z.strictObject({
  model: op.model,
  system: op.system,
  maxTokensPerTurn: op.maxTokensPerTurn.unwrap().optional(),
  budget: op.budget.unwrap().optional(),
  approvals: op.approvals,
  /** The session's hooks run before a prompt's own (both run). */
  hooks: op.hooks,
  maxStopBlocks: op.maxStopBlocks.unwrap().optional(),
  approvalTimeoutMs: op.approvalTimeoutMs.unwrap().optional(),
  toolTimeoutMs: op.toolTimeoutMs.unwrap().optional(),
  egress: op.egress.unwrap().optional(),
  heartbeatTimeoutMs: op.heartbeatTimeoutMs,
  subagents: op.subagents.unwrap().optional(),
  eagerSandbox: op.eagerSandbox.unwrap().optional(),
  context: op.context.unwrap().optional(),
  stuck: op.stuck.unwrap().optional(),
  checkpoints: op.checkpoints.unwrap().optional(),
});
export type OperationDefaults = z.output<typeof operationDefaultsSchema>;

export const sessionInputSchema = z.strictObject({
  /** Defaults to the workflow id without its `session-` prefix; must match it when given. */
  sessionId: z.string().regex(SESSION_ID_PATTERN, `must be ${SESSION_ID_RULE}`).optional(),
  /** The repository copied into the session's workspace before its first tool call. */
  repo: repoSource.optional(),
  /** What the session's sandbox runs in (`common/environment.ts`); default: devcontainer.json, else detection. */
  environment: op.environment,
  /** Task queue of the hands worker that owns the session's Docker host. */
  handsTaskQueue: z.string().min(1).optional(),
  /** Keep the container while the session is idle (the workspace volume is always kept). */
  keepContainer: z.boolean().default(false),
  /** How long the session stays idle before its container is removed (0: at once). */
  sandboxIdleMs: z
    .int()
    .min(0)
    .max(7 * 24 * 3_600_000)
    .default(0),
  /** Settings for every operation (a prompt may override them). */
  defaults: operationDefaultsSchema.default({}),
  /** Set on a session made by a rewind: its restored workspace and the lane that continues (`session-fork.ts`). */
  fork: sessionForkSchema.optional(),
});
export type SessionInput = z.input<typeof sessionInputSchema>;
export type SessionSettings = z.output<typeof sessionInputSchema>;

export const PROMPT_MAX_CHARS = 200_000;

/** The `prompt` Update's payload. */
export const promptSchema = z.strictObject({
  prompt: z
    .string()
    .trim()
    .min(1, 'must be a non-empty string')
    .max(PROMPT_MAX_CHARS)
    // It becomes the operation's goal: a prompt accepted here must never make an invalid operation.
    .refine((text) => utf8Bytes(text) <= TEXT_INPUT_MAX_BYTES, {
      error: (issue) =>
        `must be at most ${TEXT_INPUT_MAX_BYTES} bytes (got ${utf8Bytes(String(issue.input ?? ''))}): put long material in the repository and refer to it`,
    }),
  lane: laneNameSchema
    .refine(
      (lane) => !lane.startsWith(SUBAGENT_LANE_PREFIX),
      `must not start with "${SUBAGENT_LANE_PREFIX}" (subagent lanes are forked by the task tool)`,
    )
    .default(DEFAULT_LANE),
  /** Start a fresh context in the lane instead of continuing its conversation. */
  newContext: z.boolean().default(false),
  /** The operation's workflow id (default `op-<sessionId>.<n>`); unique within the session. */
  operationId: z
    .string()
    .regex(OPERATION_ID_PATTERN, "must be 1-128 letters, digits, '_', '.', ':' or '-', starting with a letter or digit")
    .refine((id) => !id.startsWith(SESSION_PREFIX), `must not start with "${SESSION_PREFIX}"`)
    .optional(),
  /** Must equal the session's repository when given (a session has one workspace, seeded once). */
  repo: repoSource.optional(),
  ...operationDefaultsSchema.shape,
});
export type PromptInput = z.input<typeof promptSchema>;
export type PromptSettings = z.output<typeof promptSchema>;

export function parseSessionInput(raw: unknown): { ok: true; value: SessionSettings } | { ok: false; error: string } {
  const result = sessionInputSchema.safeParse(raw ?? {});
  return result.success ? { ok: true, value: result.data } : { ok: false, error: describeZodError(result.error) };
}

export function parsePrompt(raw: unknown): { ok: true; value: PromptSettings } | { ok: false; error: string } {
  const result = promptSchema.safeParse(raw);
  return result.success ? { ok: true, value: result.data } : { ok: false, error: describeZodError(result.error) };
}

/** The `prompt` Update's result. */
export interface PromptAccepted {
  operationId: string;
  sessionId: string;
  lane: string;
  /** `started`: the operation runs; `queued`: a follow-up that starts when the lane's operation ends. */
  state: 'started' | 'queued';
  /** Place in the lane's queue (1 = next), when queued. */
  position?: number;
}

export const FACT_KEY_MAX = 128;
export const FACT_VALUE_MAX = 16_384;
const FACT_KEY_PATTERN = /^[A-Za-z0-9_.:/-]+$/;

/** Why a fact key or value is refused, or undefined when it is fine. */
export function factProblem(key: unknown, value: unknown): string | undefined {
  if (typeof key !== 'string' || key.length === 0) return 'key: must be a non-empty string';
  if (key.length > FACT_KEY_MAX) return `key: too long (${key.length} characters, at most ${FACT_KEY_MAX})`;
  if (!FACT_KEY_PATTERN.test(key)) return "key: use letters, digits, '_', '.', ':', '/' or '-'";
  if (typeof value !== 'string') return 'value: must be a string';
  if (value.length > FACT_VALUE_MAX) return `value: too long (${value.length} characters, at most ${FACT_VALUE_MAX})`;
  return undefined;
}

export interface FactRecord {
  value: string;
  /** Session-wide sequence number of the write (1, 2, …). */
  seq: number;
  at: string;
}

export const setFactUpdate = defineUpdate<
  { key: string; seq: number; previous?: string },
  [{ key: string; value: string }]
>('setFact');

export type IndexedOperationState = 'queued' | 'running' | OperationEndState | 'cancelled';

/** One entry of the session's index of operations. */
export interface OperationIndexEntry {
  operationId: string;
  lane: string;
  /** The prompt, cut to 200 characters. */
  prompt: string;
  state: IndexedOperationState;
  acceptedAt: string;
  endedAt?: string;
  reason?: string;
  turns?: number;
  usage?: TokenUsage;
  /** What it cost (US dollars, its model's prices), once ended. */
  costUsd?: number;
  /** For subagent operations: the operation whose `task` call started it. */
  parentOperationId?: string;
}

export interface LaneSummary {
  name: string;
  createdAt: string;
  /** The lane's open operation. */
  open?: string;
  /** Set while an abort of the open operation is under way (follow-ups are refused meanwhile). */
  aborting?: boolean;
  queued: Array<{ operationId: string; prompt: string }>;
  operations: number;
  last?: { operationId: string; state: string; reason?: string };
  /** The operation whose history holds the lane's last reply (the next operation continues from it). */
  contextFrom?: string;
  forkedFrom?: { lane: string; operationId: string; toolCallId: string };
  /** For the lane of a session made by a rewind: the operation and turn it continues. */
  rewoundFrom?: RewoundFrom;
}

/** Tokens and cost of a set of operations (a lane's, or the whole session's). */
export interface LedgerTotals {
  operations: number;
  usage: TokenUsage;
  costUsd: number;
}

/**
 * The session's ledger: what its lanes' operations used, counted as each ends (a subagent's tokens
 * are its parent operation's). Carried across continue-as-new; the index of operations keeps only
 * the latest ones, this keeps every one.
 */
export interface SessionLedger extends LedgerTotals {
  lanes: Record<string, LedgerTotals>;
}

export interface SessionStatus {
  sessionId: string;
  startedAt: string;
  /** Workflow runs so far (continue-as-new). */
  runs: number;
  repo?: SessionSettings['repo'];
  lanes: LaneSummary[];
  operations: OperationIndexEntry[];
  facts: Record<string, FactRecord>;
  sandbox: { state: 'unused' | 'up' | 'removing' | 'removed' | 'kept'; holder?: string; waiting: string[] };
  /** What the operations that ended used, per lane and in all (absent before the first ended). */
  ledger?: SessionLedger;
}

export const promptUpdate = defineUpdate<PromptAccepted, [PromptInput]>('prompt');
export const sessionStatusQuery = defineQuery<SessionStatus>('session');

/** The `type` of the ApplicationFailures the session's validators reject with. */
export const SESSION_FAILURE_TYPES = {
  invalidPrompt: 'InvalidPrompt',
  laneAborting: 'LaneAborting',
  duplicateOperation: 'DuplicateOperationId',
  repoMismatch: 'RepoMismatch',
  invalidFact: 'InvalidFact',
  invalidSessionInput: 'InvalidSessionInput',
} as const;
