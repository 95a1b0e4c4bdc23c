/**
 * The contract between the operation workflow and the brain's context steps: the model step (one
 * turn) and the compaction step (`context.ts`).
 *
 * The workflow never sends the conversation: it sends a fingerprint of the context the model has
 * already seen (`base`) and the new user message (`tail`). The brain worker appends the tail to its
 * cached copy of that context, or rebuilds the context from the operation's own history (the chain
 * of recorded steps: each model step's input tail and result, each compaction's summary and kept
 * turns, each batch of cleared tool results) when its cache is cold or the fingerprint does not
 * match. So the history holds each assistant message once (a step's result) and each user message
 * once (a step's tail): it grows by a bounded amount per step. A lane's next operation continues the
 * context of the previous one (`continues`), so a lane's context spans a chain of operations.
 *
 * Deterministic: pure functions and constants.
 */
import type { CompactContextInput, CompactContextResult, ContextClear } from './context';
import { DEFAULT_LANE } from './lanes';
import type { ContextFingerprint, TailBlock } from './context-fingerprint';
import type { McpToolDefinition } from './mcp';
import type { AssistantMessage, ModelReply } from './model-types';

/**
 * A model step's input, as every step's history holds it. Three fields may be left out, and are then
 * what `fullModelStepInput` fills in: a step's input is in every step's history, and these are the
 * same in all of an operation's steps.
 */
export interface ModelStepInput {
  /**
   * Workflow id of the operation: the cache key and where the history lives. Absent: the workflow
   * id of the activity's caller, which is the operation (the brain rebuilds from that history).
   */
  operationId?: string;
  /** The operation's lane; absent: `main` (`DEFAULT_LANE`). */
  lane?: string;
  /** 1-based model turn within the operation. */
  turn: number;
  model?: string;
  /** `max_tokens` of the request; absent: the operations' default (`DEFAULT_MAX_TOKENS_PER_TURN`). */
  maxTokens?: number;
  /** System prompt: sent only with the first step of an operation (`base.messages === 0`). */
  system?: string;
  base: ContextFingerprint;
  /**
   * Tool results of the base context to replace by stubs before this request (context editing);
   * the edited context is what the request and every later one carry.
   */
  clear?: ContextClear;
  /**
   * The oldest tool result a later clear batch may replace (its `tool_use_id`): the request gets a
   * cache breakpoint just before it (`ModelRequest.editFrontier`).
   */
  editFrontier?: string;
  /**
   * The user message that extends the context: the goal, tool results, steering. Empty to resume a
   * turn the model paused (`pause_turn`): the request then ends with the paused assistant message,
   * and the reply continues it (its blocks join that message).
   */
  tail: TailBlock[];
  /**
   * The operation whose context this operation's context extends (the previous operation of its
   * lane), sent while the operation's own steps have not moved the context yet (its first steps):
   * `base` then describes that operation's context — after its compactions and clear batches — and
   * a rebuild walks back through it (see `activities/brain/lane-chain.ts`).
   */
  continues?: string;
  /**
   * The operation's MCP tools (`common/mcp.ts`), offered after the harness's own. Absent without
   * MCP servers. Sent with every step (a cold brain rebuilds the context from history, not the
   * tools), so a step's input grows by the size of the servers' schemas.
   */
  mcpTools?: McpToolDefinition[];
}

/** `max_tokens` of each model request when an operation does not set `maxTokensPerTurn`. */
export const DEFAULT_MAX_TOKENS_PER_TURN = 8192;

/** A model step's input as the brain works on it: the fields a step may leave out, filled in. */
export type FullModelStepInput = ModelStepInput & Required<Pick<ModelStepInput, 'operationId' | 'lane' | 'maxTokens'>>;

/** Fills in what `input` left out (see `ModelStepInput`); `workflowId` is the caller's. */
export function fullModelStepInput(input: ModelStepInput, workflowId: string): FullModelStepInput {
  return {
    ...input,
    operationId: input.operationId ?? workflowId,
    lane: input.lane ?? DEFAULT_LANE,
    maxTokens: input.maxTokens ?? DEFAULT_MAX_TOKENS_PER_TURN,
  };
}

/**
 * A model step's result, as every step's history holds it: the reply with the message's id, model
 * and content (what the context, a rewind and the token report read back) and its stop reason once
 * (`stopReason`). The API's constant `type` and `role`, its `stop_reason` again and a null
 * `stop_sequence` are left out (`recordedReply`); results recorded before carry them.
 */
export interface ModelStepResult extends Omit<ModelReply, 'message'> {
  message: RecordedAssistantMessage;
  /** The brain rebuilt the context from history for this step (cold cache or mismatch); absent when it did not. */
  rebuilt?: boolean;
}

export type RecordedAssistantMessage = Pick<AssistantMessage, 'id' | 'model' | 'content'> &
  Partial<Pick<AssistantMessage, 'type' | 'role' | 'stop_reason' | 'stop_sequence'>>;

/** The result a model step records for `reply` (see `ModelStepResult`). */
export function recordedReply(reply: ModelReply, rebuilt: boolean): ModelStepResult {
  const { id, model, content, stop_sequence } = reply.message;
  return {
    ...reply,
    message: { id, model, content, ...(stop_sequence !== null ? { stop_sequence } : {}) },
    ...(rebuilt ? { rebuilt } : {}),
  };
}

/** The activity type names, used when the brain reads steps back from history. */
export const MODEL_STEP_ACTIVITY = 'modelStep';

/** The brain's activities, as the workflows call them (implemented in `activities/brain/`). */
export interface BrainActivities {
  /**
   * One model turn: the context `base` describes (edited by `clear`) plus the new `tail`, sent as
   * one Messages API request; the reply and its usage (failed attempts included) come back.
   */
  modelStep(input: ModelStepInput): Promise<ModelStepResult>;
  /**
   * One compaction: a model call that summarises the context `base` describes (and the pending
   * tail), then the compacted context — system, goal and summary, the newest turns verbatim —
   * replaces it in the brain's cache. Fails like a model call (classified, usage in the details).
   */
  compactContext(input: CompactContextInput): Promise<CompactContextResult>;
}
