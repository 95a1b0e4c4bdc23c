/**
 * The operation contract: what a caller submits, what it can ask and send while the operation runs,
 * and what it gets back. Shared by the workflow, the workers, the CLI and `temporal workflow start`.
 *
 * Deterministic (imported by workflow code): zod and Temporal definitions only.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import { onExceededSchema } from './budget';
import { checkpointSettingsSchema } from './checkpoints';
import { contextPolicySchema } from './context';
import { egressPolicySchema, type EgressSummary } from './egress';
import { environmentInputSchema, type PreparedEnvironment } from './environment';
import {
  APPROVAL_TIMEOUT_DEFAULT_MS,
  APPROVAL_TIMEOUT_MAX_MS,
  approvalRulesSchema,
  type WaitingApproval,
} from './approvals';
import { DEFAULT_TOOL_TIMEOUT_MS } from './hands';
import { handsHostSchema, type HandsHost } from './hands-route';
import { hooksSchema, STOP_BLOCKS_DEFAULT } from './hooks';
import { mcpServersSchema } from './mcp';
import {
  laneContinuationSchema,
  laneNameSchema,
  lineageSchema,
  sessionLinkSchema,
  subagentLimitsSchema,
  type LaneContext,
} from './lanes';
import { DEFAULT_MAX_TOKENS_PER_TURN } from './model-step';
import type { TokenUsage, ToolResultBlockParam } from './model-types';
import type { TokenEconomy } from './token-ledger';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from './sandbox-names';
import { stuckLimitsSchema, type StuckState } from './stuck';
import { MODEL_TOOL_NAMES } from './tools';
import { describeZodError, utf8Bytes } from './validation';

/** The workflow type name, for `temporal workflow start --type operation`. */
export const OPERATION_WORKFLOW_TYPE = 'operation';

/**
 * Most bytes of `goal` and `system` (UTF-8). Well under Temporal's payload limits (a warning at
 * 512 KiB, a refusal at 2 MiB): the goal is recorded in the start event and again in the first model
 * step's input. Put long material in the repository and point the goal at it.
 */
export const TEXT_INPUT_MAX_BYTES = 256 * 1024;
/** Most characters of a name-like field (lane, model, task queue). */
const NAME_MAX_CHARS = 200;

/** A zod refinement: at most `max` bytes of UTF-8, with a message that says how much there was. */
function withinBytes(max: number): [(text: string) => boolean, { error: (issue: { input?: unknown }) => string }] {
  return [
    (text) => utf8Bytes(text) <= max,
    {
      error: (issue) =>
        `must be at most ${max} bytes (got ${utf8Bytes(String(issue.input ?? ''))}): put long material in the repository and refer to it`,
    },
  ];
}

/**
 * The repository to seed the workspace from. A local path must be absolute; the hands worker checks
 * again that it exists, is a directory and lies inside its allowed roots (`AGENT_ALLOWED_ROOTS`)
 * once the first model call has answered, before any tool runs. Nothing here may start with `-` (it would reach `git` as an option).
 */
export const repoSource = z.discriminatedUnion(
  'kind',
  [
    z.strictObject({
      kind: z.literal('local'),
      path: z
        .string()
        .min(1, 'must be a non-empty path')
        .refine((p) => p.startsWith('/'), 'must be an absolute path (the hands worker does not guess a directory)')
        .refine(noControlCharacters, 'must not contain control characters'),
    }),
    z.strictObject({
      kind: z.literal('git'),
      url: z
        .string()
        .min(1, 'must be a non-empty URL')
        .refine((u) => !u.startsWith('-'), 'must not start with "-"')
        .refine(noControlCharacters, 'must not contain control characters'),
      ref: z
        .string()
        .min(1, 'must be a non-empty branch, tag or commit')
        .refine((r) => !r.startsWith('-'), 'must not start with "-"')
        .refine(noControlCharacters, 'must not contain control characters')
        .optional(),
    }),
  ],
  { error: (issue) => (issue.code === 'invalid_union' ? 'must be "local" or "git"' : undefined) },
);

function noControlCharacters(text: string): boolean {
  // eslint-disable-next-line no-control-regex -- the point is to find control characters
  return !/[\u0000-\u001f\u007f]/.test(text);
}

export const operationBudgetSchema = z.strictObject({
  /** Model turns before the operation fails with reason `budget: turns`. */
  maxTurns: z.int().positive().max(10_000).default(50),
  /** Total tokens (all input kinds + output) before it fails with `budget: tokens`. */
  maxTotalTokens: z.int().positive().optional(),
  /** Wall-clock limit from the operation's start, in milliseconds (`budget: deadline`). */
  maxDurationMs: z.int().positive().optional(),
  /** Cost in US dollars (`common/pricing.ts`, failed attempts and compactions included) before it fails with `budget: cost`. */
  maxCostUsd: z.number({ error: 'must be a number of US dollars' }).positive('must be positive').optional(),
  /**
   * What a spent budget does: `end` the operation (the default), or `ask` — pause it with a waiting
   * approval that extends the budget by a quarter when approved (`common/budget.ts`).
   */
  onExceeded: onExceededSchema,
});

export const operationInputSchema = z.strictObject({
  /** What the agent should achieve; the first user message. */
  goal: z
    .string()
    .trim()
    .min(1, 'must be a non-empty string')
    .refine(...withinBytes(TEXT_INPUT_MAX_BYTES)),
  /** Session the operation belongs to; its sandbox and workspace volume are named after it. Defaults to the workflow id. */
  sessionId: z.string().regex(SESSION_ID_PATTERN, `must be ${SESSION_ID_RULE}`).optional(),
  lane: laneNameSchema.default('main'),
  /** Repository copied into the workspace before the first tool call. */
  repo: repoSource.optional(),
  /** Overrides the default system prompt. */
  system: z
    .string()
    .min(1)
    .refine(...withinBytes(TEXT_INPUT_MAX_BYTES))
    .optional(),
  /** Model name; defaults to the brain worker's configured model. */
  model: z.string().min(1).max(NAME_MAX_CHARS).optional(),
  /** `max_tokens` for each model request. */
  maxTokensPerTurn: z.int().positive().max(128_000).default(DEFAULT_MAX_TOKENS_PER_TURN),
  budget: operationBudgetSchema.default({ maxTurns: 50 }),
  /** Task queue of the hands worker that owns the Docker host. */
  handsTaskQueue: z.string().min(1).max(NAME_MAX_CHARS).optional(),
  /** Create the sandbox as the operation starts (in parallel with the first model call) instead of at the first tool call. */
  eagerSandbox: z.boolean().default(false),
  /** Keep the container after the operation ends (the volume is always kept). */
  keepContainer: z.boolean().default(false),
  /**
   * How long a model or tool activity may go without a heartbeat before Temporal retries it on
   * another worker, i.e. how fast a dead worker is noticed. Default: the presets in
   * `workflows/shared/policies.ts` (model 15 s, tool 5 s, sandbox 10 s).
   */
  heartbeatTimeoutMs: z.int().min(1_000).max(600_000).optional(),
  /** Default timeout of one tool call in milliseconds. */
  toolTimeoutMs: z.int().positive().max(3_600_000).default(DEFAULT_TOOL_TIMEOUT_MS),
  /**
   * What the sandbox may reach through the hands' egress proxy (`common/egress.ts`): `none`,
   * `registries` or `{"allow": ["host", …], "credentials": {…}}`. Subagents inherit it.
   */
  egress: egressPolicySchema.default('none'),
  /**
   * What the sandbox runs in (`common/environment.ts`): `"default"`, or `{image?, dockerfile?, setup?,
   * update?, env?, toolchains?}`. Without it, the repository's devcontainer.json, else detection from
   * its files. Applies when the workspace is made (a session's first operation).
   */
  environment: environmentInputSchema.optional(),
  /** When the operation calls itself stuck (`common/stuck.ts`); every limit has a default. */
  stuck: stuckLimitsSchema.prefault({}),
  /** How the context is kept inside the model's window: compaction, context editing, continuations (`common/context.ts`). */
  context: contextPolicySchema.prefault({}),
  /**
   * Tool-call policies (`common/approvals.ts`): a map from a tool name or `"<tool>:/<regex>/"` to
   * `auto | ask | deny`, e.g. `{"bash:/git push/": "ask"}`. Default: every call `auto`.
   */
  approvals: approvalRulesSchema(MODEL_TOOL_NAMES).optional(),
  /**
   * Hooks on named events (`common/hooks.ts`, docs/hooks.md): `{"PreToolUse": [{"matcher": "bash",
   * "hooks": [{"type": "command", "command": "…", "timeout": 30}]}], "Stop": […]}`. Default: none.
   */
  hooks: hooksSchema.optional(),
  /** How many times Stop hooks may refuse the end of the operation; after that it ends as the model asked. */
  maxStopBlocks: z.int().min(0).max(100).default(STOP_BLOCKS_DEFAULT),
  /** How long an `ask` call waits for `agent approve` before it is denied. */
  approvalTimeoutMs: z.int().min(1_000).max(APPROVAL_TIMEOUT_MAX_MS).default(APPROVAL_TIMEOUT_DEFAULT_MS),
  /** Limits on the `task` tool (subagents): nesting depth and calls per operation. */
  subagents: subagentLimitsSchema.default({ maxDepth: 2, maxPerOperation: 10 }),
  /** Continue a lane's conversation from this point instead of a fresh context (set by the session). */
  continues: laneContinuationSchema.optional(),
  /** Text that enters the first message before the goal (session facts, notes the lane has not seen). */
  notes: z.array(z.string().min(1)).max(100).optional(),
  /** The session workflow that runs this operation and owns its sandbox (set by the session). */
  session: sessionLinkSchema.optional(),
  /** Set on subagent operations (by the `task` tool). */
  lineage: lineageSchema.optional(),
  /**
   * The hands host holding the session's workspace, when the session or the parent operation knows
   * it (set by them): the operation's hands calls go there instead of claiming a host.
   */
  handsHost: handsHostSchema.optional(),
  /**
   * MCP servers whose tools the model may call (`common/mcp.ts`): name → a stdio server
   * (`command`, `args`, `env`) or an HTTP server (`url`, `headers`), run by the brain worker.
   */
  mcpServers: mcpServersSchema.optional(),
  /**
   * Checkpoints of the workspace after each turn that could change it (`common/checkpoints.ts`):
   * `{enabled?, exclude?}`; default on, without `node_modules/` and `.venv/`.
   */
  checkpoints: checkpointSettingsSchema.prefault({}),
});

export type OperationInput = z.input<typeof operationInputSchema>;
export type OperationSettings = z.output<typeof operationInputSchema>;

/** Parses workflow input; a failure names every offending field. */
export function parseOperationInput(
  raw: unknown,
): { ok: true; value: OperationSettings } | { ok: false; error: string } {
  const result = operationInputSchema.safeParse(raw);
  return result.success ? { ok: true, value: result.data } : { ok: false, error: describeZodError(result.error, raw) };
}

export type OperationState = 'running' | 'waiting-approval' | 'completed' | 'failed' | 'aborted';
export type OperationEndState = Exclude<OperationState, 'running' | 'waiting-approval'>;

export interface OperationStatus {
  state: OperationState;
  /** The session the operation runs in (its sandbox and workspace volume are named after it). */
  sessionId: string;
  /** Why it ended (`end_turn`, `budget: turns`, `aborted: <reason>`, ...); absent while running. */
  reason?: string;
  /** Model turns completed. */
  turn: number;
  /** Steps taken (one model call or one tool call each). */
  steps: number;
  /** What the operation is doing now. */
  phase: 'starting' | 'model' | 'compacting' | 'tools' | 'finishing' | 'done';
  lastTool?: { name: string; summary: string; isError?: boolean };
  usage: TokenUsage;
  costUsd: number;
  /** Steering messages accepted but not yet in the context. */
  pendingSteering: number;
  startedAt: string;
  /** Workflow runs so far (continue-as-new). */
  runs: number;
  /** Set while the operation is stuck: why, on what, since when (cleared when the cause goes away). */
  stuck?: StuckState;
  /** What the operation waits for now (`model turn 3`, `tool bash: npm test on agent-hands`). */
  waitingFor?: string;
  /** The hands host holding the session's workspace, once a tool call chose it. */
  handsHost?: string;
  /** The context the next request carries, as the operation plans it. */
  context: ContextStatus;
  /** The token ledger so far (`common/token-ledger.ts`). */
  tokens: TokenEconomy;
  lane?: string;
  /** The tool call waiting for `agent approve` (state `waiting-approval`). */
  waitingApproval?: WaitingApproval;
}

export interface ContextStatus {
  windowTokens: number;
  /** Estimated prompt tokens of the next request. */
  promptTokens: number;
  /** `promptTokens` as a percentage of the window. */
  pct: number;
  compactions: number;
  editBatches: number;
  /** A compaction asked for (`agent compact`) and not yet run. */
  compactionRequested: boolean;
}

export interface OperationResult {
  /** The workspace's environment (`common/environment.ts`), once prepared. */
  environment?: PreparedEnvironment;
  state: OperationEndState;
  reason: string;
  turns: number;
  steps: number;
  usage: TokenUsage;
  costUsd: number;
  /** The last assistant text. */
  finalText: string;
  sessionId: string;
  /** Workspace volume holding the operation's files. */
  workspaceVolume: string;
  /**
   * Tool results the model has not seen: the results (synthetic when cut off) of the calls of the
   * last turn when the operation ended in the middle of it, e.g. by an abort: the record of what
   * each of that turn's `tool_use` blocks would have been answered with.
   */
  openToolResults: ToolResultBlockParam[];
  /** The run's last "current details" (markdown), kept so a closed run still shows them. */
  details?: string;
  /** The hands host that held the workspace. */
  handsHost?: string;
  /**
   * That host as hands calls are routed to it: the session (or the parent operation) sends the next
   * operations there. In the result because a signal sent as a workflow ends is not delivered.
   */
  handsRoute?: HandsHost;
  /** The token ledger: cost, cache-hit rate, peak context, compactions and what each technique saved. */
  tokens: TokenEconomy;
  lane?: string;
  /** The context the operation ended with (where its lane's next operation continues, `common/lanes.ts`). */
  context?: LaneContext;
  /** Steering and session facts accepted but not yet in the context (the lane's next operation gets them). */
  pendingNotes?: string[];
  /** The requests the sandbox made through the egress proxy (absent when it made none). */
  egress?: EgressSummary;
}

export const steerUpdate = defineUpdate<{ accepted: true; position: number }, [{ text: string }]>('steer');
export const abortUpdate = defineUpdate<{ accepted: true }, [{ reason?: string }]>('abort');
export const statusQuery = defineQuery<OperationStatus>('status');

/**
 * Asks for a compaction at the next checkpoint (after the current model or tool step). Refused once
 * the operation has ended. The compaction itself is a recorded step like any other.
 */
export const compactUpdate = defineUpdate<{ accepted: true }, [{ reason?: string }]>('compact');

/**
 * An operation's model is fixed for its life (a switch mid-way would rebuild the whole prompt
 * cache): this Update is always refused, with the way to do it — name the model in the lane's next
 * operation, which compacts first when the new model's window is smaller than the context.
 */
export const switchModelUpdate = defineUpdate<never, [{ model: string }]>('switchModel');
