/**
 * A lane's context spans a chain of operations: each operation of a lane continues the context of the
 * one before it (`ModelStepInput.continues` on its first step, whose `base` is the fingerprint of
 * the context it extends). This walks the chain back from the operation being rebuilt to the first
 * operation with a fresh context, over the recorded steps of each operation alone, and returns the
 * steps of the whole lane context, oldest first. A predecessor's steps are cut at the reply the next
 * operation continues from (a step that completed after its operation stopped listening is not part
 * of the lane).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ContextFingerprint, ModelStepInput, ModelStepResult } from '../../common/model-step';

export interface RecordedStep {
  input: ModelStepInput;
  result: ModelStepResult;
}

/** The completed model steps of one operation (all its runs), in order. */
export type ReadOperationSteps = (operationId: string) => Promise<RecordedStep[]>;

/** Where the head operation's context starts when it has no recorded step yet (its first step's input). */
export interface ChainHead {
  continues?: string;
  base?: ContextFingerprint;
}

export async function laneChainSteps(
  read: ReadOperationSteps,
  headSteps: RecordedStep[],
  head: ChainHead = {},
): Promise<RecordedStep[]> {
  const chain: RecordedStep[][] = [headSteps];
  let continues = headSteps.length > 0 ? headSteps[0].input.continues : head.continues;
  let expected = headSteps.length > 0 ? headSteps[0].input.base : head.base;
  const visited = new Set<string>();
  while (continues && expected && expected.messages > 0) {
    if (visited.has(continues)) {
      throw ApplicationFailure.nonRetryable(`the lane's chain of operations loops at ${continues}`, 'ContextMismatch');
    }
    visited.add(continues);
    const steps = await read(continues);
    const lastReplyId = expected.lastReplyId;
    const end = steps.findIndex((step) => step.result.message.id === lastReplyId);
    if (end < 0) {
      throw ApplicationFailure.nonRetryable(
        `operation ${continues} has no reply ${lastReplyId} to continue from`,
        'ContextMismatch',
      );
    }
    const kept = steps.slice(0, end + 1);
    chain.unshift(kept);
    continues = kept[0].input.continues;
    expected = kept[0].input.base;
  }
  return chain.flat();
}
