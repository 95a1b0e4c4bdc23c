/**
 * A review round (`revision` in the input) instead of a night's features: on the existing branch,
 * one operation with the request and the comments as its goal (a fresh context from the workspace,
 * as a feature's), the integrity guard, the task's `verify`, and one commit pushed to the same branch
 * — none when nothing changed. Up to `budget.maxAttemptsPerFeature` attempts; the work of a round
 * that never verified is shelved under a ref. The agent's replies (`.agent/pr-replies.json`) go into
 * the result, for the pull-request loop to post.
 */
import { revisionCommentRef, type RevisionOutcome } from '../../common/coding-task';
import { parsePrReplies } from '../../common/pull-request';
import { revisionGoal } from '../../common/task-prompts';
import type { RepoActivities, VerifyResult } from '../../common/repo';
import { verifyActivityOptions } from '../shared/policies';
import { describeFailedVerification } from './feature';
import { commitAndPush, guardWorkspace, taskHandsQueue, taskWorkspace } from './repo';
import { runTaskOperation } from './task-operation';
import { TaskEnd, type TaskRun } from './state';
import { taskActivities } from './stuck';
import { showTaskDetails } from './visibility';

const GIT_LOG_COMMITS = 20;
const SUMMARY_MAX = 4_000;

export async function reviseBranch(task: TaskRun): Promise<TaskEnd> {
  const { carry, settings } = task;
  const revision = settings.revision!;
  const progress = (carry.revision ??= { attempts: 0 });
  const maxAttempts = settings.budget.maxAttemptsPerFeature;
  const refs = revision.comments.map(revisionCommentRef);
  while (progress.attempts < maxAttempts) {
    const attempt = progress.attempts + 1;
    const operationId = `${task.taskId}.revision.${attempt}`;
    task.phase = 'feature';
    const snapshot = await taskWorkspace(task).workspaceSnapshot({
      sessionId: task.sessionId,
      logCount: GIT_LOG_COMMITS,
    });
    const goal = revisionGoal({
      branch: task.branch,
      revision,
      attempt,
      maxAttempts,
      ...(settings.verify ? { taskVerify: settings.verify } : {}),
      snapshot,
      ...(progress.lastError ? { previousFailure: progress.lastError } : {}),
      featureList: !carry.noFeatureList,
    });
    progress.attempts = attempt;
    const { entry, finalText, modelUnavailable } = await runTaskOperation(task, {
      kind: 'revision',
      operationId,
      goal,
      summary: `${revision.kind} round on ${task.branch} (attempt ${attempt})`,
      attempt,
    });
    if (modelUnavailable) return end(task, { failure: `the model could not be reached: ${entry.reason}`, finalText });
    const { workKept } = await guardWorkspace(task, { operationId, attempt });
    let failure: string | undefined;
    if (entry.state === 'aborted') failure = `the operation was aborted: ${entry.reason}`;
    else if (!workKept) failure = 'the history was rewritten, so the work was discarded (see the integrity notes)';
    else if (settings.verify) {
      const verified = await verifyRevision(task, operationId);
      entry.verified = verified.passed;
      if (!verified.passed) failure = describeFailedVerification(verified, entry.state, entry.reason);
    }
    if (failure === undefined) {
      const { text } = await taskWorkspace(task).readRevisionReplies({ sessionId: task.sessionId });
      const replies = parsePrReplies(text, refs).replies;
      const committed = await commitAndPush(task, {
        operationId,
        subject: subjectOf(revision.kind, revision.pullRequest),
        skipIfUnchanged: true,
      });
      if (!committed.unchanged) entry.commit = committed.sha;
      progress.outcome = {
        kind: revision.kind,
        ...(committed.unchanged ? {} : { commit: committed.sha }),
        verified: true,
        attempts: attempt,
        replies,
        summary: finalText.slice(0, SUMMARY_MAX),
      };
      task.current = undefined;
      showTaskDetails(task);
      return (
        committed.end ??
        new TaskEnd('completed', committed.unchanged ? 'the round changed nothing' : 'the round was pushed')
      );
    }
    entry.verifyError = failure;
    progress.lastError = failure;
    if (progress.attempts >= maxAttempts) return end(task, { failure, finalText, shelve: true });
  }
  return end(task, { failure: progress.lastError ?? 'no attempt left', finalText: '' });
}

async function end(task: TaskRun, how: { failure: string; finalText: string; shelve?: boolean }): Promise<TaskEnd> {
  const { carry, settings } = task;
  const progress = carry.revision!;
  if (how.shelve) {
    await taskWorkspace(task).shelveAttempt({
      sessionId: task.sessionId,
      branch: task.branch,
      acceptedCommit: carry.accepted,
      ref: `refs/agent/revision/${task.taskId.replace(/[^A-Za-z0-9._-]+/g, '-')}`,
      message: `A review round not accepted after ${progress.attempts} attempts: its last attempt's work`,
    });
  }
  progress.outcome = {
    kind: settings.revision!.kind,
    verified: false,
    failure: how.failure,
    attempts: progress.attempts,
    replies: [],
    summary: how.finalText.slice(0, SUMMARY_MAX),
  } satisfies RevisionOutcome;
  task.current = undefined;
  showTaskDetails(task);
  return new TaskEnd(
    'failed',
    `the round was not accepted after ${progress.attempts} attempts: ${firstLine(how.failure)}`,
  );
}

async function verifyRevision(task: TaskRun, key: string): Promise<VerifyResult> {
  const { settings } = task;
  task.phase = 'verifying';
  showTaskDetails(task);
  const { verifyWorkspace } = taskActivities<RepoActivities>(task, {
    ...verifyActivityOptions(settings.verifyTimeoutMs, 1),
    taskQueue: taskHandsQueue(task),
    summary: 'verify the round',
  });
  return verifyWorkspace({
    sessionId: task.sessionId,
    key,
    checks: [{ name: 'regression', command: settings.verify! }],
    timeoutMs: settings.verifyTimeoutMs,
  });
}

function subjectOf(kind: RevisionOutcome['kind'], pullRequest: number | undefined): string {
  const of = pullRequest ? ` of #${pullRequest}` : '';
  if (kind === 'checks') return `Fix the failing checks${of}`;
  if (kind === 'command') return `Apply the requested change${of}`;
  return `Address the review${of}`;
}

function firstLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim()) ?? text;
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}
