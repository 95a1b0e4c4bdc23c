/**
 * One round: a `codingTask` child with a `revision` on the pull request's branch (id
 * `<loop id>.round-<n>`, so a replay or a retry never starts a second), its outcome recorded in the
 * loop — the round, its cost, the comments and reviews it handled, and for a fix round the head it
 * was for. A person ending the loop cancels the round.
 */
import {
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowFailure,
  executeChild,
  isCancellation,
  ParentClosePolicy,
  workflowInfo,
} from '@temporalio/workflow';
import {
  CODING_TASK_FAILURES,
  CODING_TASK_WORKFLOW_TYPE,
  type CodingTaskInput,
  type CodingTaskResult,
} from '../../common/coding-task';
import { addIdsToRanges } from '../../common/forge';
import { addUsage } from '../../common/model-types';
import type { PullRequestRound } from '../../common/pull-request';
import type { RoundOutcome } from './replies';
import { publishLoop, type PrLoop, type RoundWork } from './state';

/** Rounds kept in the carry (the body's section and the details show these). */
const ROUNDS_KEPT = 50;

export async function runRound(loop: PrLoop, work: RoundWork): Promise<RoundOutcome | undefined> {
  const { carry, settings } = loop;
  const round = (carry.rounds[carry.rounds.length - 1]?.round ?? 0) + 1;
  const taskId = `${loop.id}.round-${round}`;
  loop.current = { taskId, kind: work.kind };
  carry.state = 'working';
  publishLoop(loop);
  const input: CodingTaskInput = {
    ...settings.task,
    repo: { kind: 'forge', forge: settings.forge, repository: settings.repository },
    branch: settings.branch,
    revision: {
      kind: work.kind,
      instructions: work.instructions,
      comments: work.comments,
      pullRequest: settings.number,
    },
  };
  let result: CodingTaskResult | undefined;
  let failure: string | undefined;
  const scope = new CancellationScope();
  loop.roundScope = scope;
  try {
    result = await scope.run(() =>
      executeChild<(input: CodingTaskInput) => Promise<CodingTaskResult>>(CODING_TASK_WORKFLOW_TYPE, {
        workflowId: taskId,
        taskQueue: workflowInfo().taskQueue,
        args: [input],
        parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
        staticSummary: `${work.kind} round ${round} of ${settings.repository}#${settings.number}`.slice(0, 190),
      }),
    );
  } catch (err) {
    result = carriedResult(err);
    if (!result)
      failure =
        isCancellation(err) || isCancellation((err as { cause?: unknown }).cause)
          ? 'the round was cancelled (the loop was ended)'
          : `the round ended without a result: ${(err as Error).message}`;
  } finally {
    loop.roundScope = undefined;
    loop.current = undefined;
  }
  const outcome: RoundOutcome = {
    round,
    taskId,
    state: result?.state ?? 'failed',
    ...(result?.revision?.commit ? { commit: result.revision.commit } : {}),
    ...(failure || result?.revision?.failure || (result && result.state !== 'completed')
      ? { failure: failure ?? result?.revision?.failure ?? result?.reason ?? 'the round failed' }
      : {}),
    replies: result?.revision?.replies ?? [],
  };
  record(loop, work, outcome, result);
  return outcome;
}

/** A failed task carries its result in the failure's details. */
function carriedResult(err: unknown): CodingTaskResult | undefined {
  if (!(err instanceof ChildWorkflowFailure) || !(err.cause instanceof ApplicationFailure)) return undefined;
  if (err.cause.type !== CODING_TASK_FAILURES.failed) return undefined;
  return err.cause.details?.[0] as CodingTaskResult | undefined;
}

function record(loop: PrLoop, work: RoundWork, outcome: RoundOutcome, result: CodingTaskResult | undefined): void {
  const { carry } = loop;
  const entry: PullRequestRound = {
    round: outcome.round,
    kind: work.kind,
    taskId: outcome.taskId,
    trigger: work.trigger,
    state: outcome.state,
    ...(outcome.commit ? { commit: outcome.commit } : {}),
    replies: work.comments.length,
    costUsd: result?.costUsd ?? 0,
    reason: outcome.failure ?? result?.reason ?? '',
  };
  carry.rounds = [...carry.rounds, entry].slice(-ROUNDS_KEPT);
  carry.handledReviews = addIdsToRanges(carry.handledReviews, work.reviewIds);
  carry.handledComments = addIdsToRanges(carry.handledComments, work.commentIds);
  if (work.kind === 'checks') {
    carry.fixRoundsUsed += 1;
    if (work.head) carry.checkedHeads = [...carry.checkedHeads, work.head].slice(-200);
  } else {
    carry.reviewRoundsUsed += 1;
  }
  if (result) {
    carry.usage = addUsage(carry.usage, result.usage);
    carry.costUsd += result.costUsd;
  }
  publishLoop(loop);
}
