/**
 * The contract between the operation workflow and the brain's model-step activity.
 *
 * The workflow never sends the conversation: it sends a fingerprint of the context the model has
 * already seen (`base`) and the new user message (`tail`). The brain worker appends the tail to its
 * cached copy of that context, or rebuilds the context from the operation's own history (the chain
 * of `modelStep` inputs and results) when its cache is cold or the fingerprint does not match.
 * So the history holds each assistant message once (a step's result) and each user message once (a
 * step's tail): it grows by a bounded amount per step. A lane's next operation continues the
 * context of the previous one (`continues`), so a lane's context spans a chain of operations.
 *
 * Deterministic: type-only imports.
 */
import type { ContentBlockParam, ModelReply } from './model-types';

/** Identifies the context before the tail: its message count and the id of its last assistant message. */
export interface ContextFingerprint {
  messages: number;
  lastReplyId: string | null;
}

export type TailBlock = ContentBlockParam;

export interface ModelStepInput {
  /** Workflow id of the operation: the cache key and where the history lives. */
  operationId: string;
  lane: string;
  /** 1-based model turn within the operation. */
  turn: number;
  model?: string;
  maxTokens: number;
  /** System prompt: sent only with the first step of an operation (`base.messages === 0`). */
  system?: string;
  base: ContextFingerprint;
  /** The user message that extends the context: the goal, tool results, steering. */
  tail: TailBlock[];
  /**
   * The operation whose context this operation's context extends (the previous operation of its
   * lane), sent with the operation's first step only: `base` then describes that operation's
   * context, and a rebuild walks back through it (see `activities/brain/lane-chain.ts`).
   */
  continues?: string;
}

export interface ModelStepResult extends ModelReply {
  /** Whether the brain rebuilt the context from history for this step (cold cache or mismatch). */
  rebuilt: boolean;
}

/** The activity type name, used when the brain reads steps back from history. */
export const MODEL_STEP_ACTIVITY = 'modelStep';

/** The brain's activities, as the workflows call them (implemented in `activities/brain/`). */
export interface BrainActivities {
  /**
   * One model turn: the context `base` describes plus the new `tail`, sent as one Messages API
   * request; the reply and its usage (failed attempts included) come back.
   */
  modelStep(input: ModelStepInput): Promise<ModelStepResult>;
}
