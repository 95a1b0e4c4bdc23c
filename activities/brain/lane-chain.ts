/**
 * A lane's context spans a chain of operations: each operation of a lane continues the context of the
 * one before it (`continues` on its first context steps, whose `base` is the fingerprint of the
 * context it takes over — after that operation's compactions and clear batches). A rebuild needs the
 * recorded steps from the latest completed compaction on (it holds everything the context keeps from
 * before it), so this walks the chain back from the operation being rebuilt until it meets one, or
 * reaches an operation that started a fresh context, and returns those steps oldest first.
 *
 * A predecessor's steps are cut at the step after which its context was the one the next operation
 * took over (a step that completed after its operation stopped listening is not part of the lane).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ContextFingerprint } from '../../common/context-fingerprint';
import type { RecordedStep } from '../../common/recorded-steps';

/** The recorded steps of one operation, over all its runs, in order. */
export type ReadOperationSteps = (operationId: string) => Promise<RecordedStep[]>;

/**
 * The steps a lane context is assembled from, given `own` — the operation's recorded steps from its
 * latest completed compaction, or from its first step when it has none (its first step then says
 * which operation's context it continues).
 */
export async function laneChainSteps(read: ReadOperationSteps, own: RecordedStep[]): Promise<RecordedStep[]> {
  const chain: RecordedStep[][] = [own];
  let link = linkOf(own);
  const visited = new Set<string>();
  while (link) {
    const { continues, base } = link;
    if (visited.has(continues)) {
      throw ApplicationFailure.nonRetryable(`the lane's chain of operations loops at ${continues}`, 'ContextMismatch');
    }
    visited.add(continues);
    const steps = await read(continues);
    const end = findLastIndex(steps, (step) => endsAt(step, base));
    if (end < 0) {
      throw ApplicationFailure.nonRetryable(
        `operation ${continues} has no step after which its context was ${describe(base)} to continue from`,
        'ContextMismatch',
      );
    }
    const kept = steps.slice(0, end + 1);
    const compaction = findLastIndex(kept, isCompleted('compaction'));
    chain.unshift(compaction >= 0 ? kept.slice(compaction) : kept);
    link = compaction >= 0 ? undefined : linkOf(kept);
  }
  return chain.flat();
}

/** Where `steps` (an operation's from its first step) continue another operation's context, if they do and nothing since was compacted. */
function linkOf(steps: RecordedStep[]): { continues: string; base: ContextFingerprint } | undefined {
  if (steps.some(isCompleted('compaction'))) return undefined;
  const first = steps[0];
  if (!first?.input.continues || first.input.base.messages === 0) return undefined;
  return { continues: first.input.continues, base: first.input.base };
}

const isCompleted =
  (kind: RecordedStep['kind']) =>
  (step: RecordedStep): boolean =>
    step.kind === kind && step.result !== undefined;

/**
 * Whether the context after `step` is the one `base` describes, by its last reply and its
 * compaction and clear-batch counts (the message count is checked when the whole chain is assembled).
 */
function endsAt(step: RecordedStep, base: ContextFingerprint): boolean {
  const after = contextAfter(step);
  return (
    after !== undefined &&
    after.lastReplyId === base.lastReplyId &&
    after.compactions === (base.compactions ?? 0) &&
    after.edits === (base.edits ?? 0)
  );
}

function contextAfter(step: RecordedStep): Omit<Required<ContextFingerprint>, 'messages'> | undefined {
  if (!step.result) return undefined;
  if (step.kind === 'compaction') return step.result.context;
  return {
    lastReplyId: step.result.message.id,
    compactions: step.input.base.compactions ?? 0,
    edits: step.input.clear?.batch ?? step.input.base.edits ?? 0,
  };
}

function describe(base: ContextFingerprint): string {
  return `ending at ${base.lastReplyId} (${base.compactions ?? 0} compactions, ${base.edits ?? 0} clear batches)`;
}

function findLastIndex<T>(items: readonly T[], test: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (test(items[i]!)) return i;
  return -1;
}
