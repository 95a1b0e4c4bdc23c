/**
 * `codingTask`: an overnight run on a repository branch, longer than any one context window.
 *
 *   prepare (host clone, branch into the workspace) → initializer operation on a branch without a
 *   feature list → for each feature not yet passing: one fresh operation per attempt → integrity
 *   guard → the harness's verification → one commit, pushed from the host → … → report.
 *
 * Operations hand over through files and git (HANDOFF.md, the feature list, the history), never a
 * transcript. The run ends honestly — every feature passes, a budget ends it, or nothing is left but
 * skipped features — with a morning report in its result and in `.agent/reports/`. Failures that
 * need a person (bad input, an unreachable repository, a malformed feature list, a refused push, an
 * unreachable model) fail the workflow with `CodingTaskFailed`, the result in its details.
 *
 * Durable: a killed worker or server resumes where the history stands — the running operation is a
 * child workflow that carries on by itself, and every repo step converges when retried (a commit or
 * a push is recognised, not repeated).
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { foldPatches } from '../shared/patches';
import { CODING_TASK_FAILURES, type CodingTaskResult } from '../../common/coding-task';
import { abortUpdate } from '../../common/operation';
import { renderTaskReport } from '../../common/task-report';
import { acceptTaskApprovals, spentTaskBudget, startTaskDeadline, taskEndUnlessExtended } from './budget';
import { prepareTask } from './prepare';
import { openPullRequest } from './pull-request';
import { reviseBranch } from './revision';
import { attemptFeature } from './feature';
import { claimTaskHost, hostGit, taskSandbox, taskWorkspace } from './repo';
import { startTaskRun, TaskEnd, type TaskCarry, type TaskRun } from './state';
import { claimWatch } from './stuck';
import { answerTaskStatus, publishTaskAttributes, reportData, showTaskDetails } from './visibility';

export type { TaskCarry } from './state';

export async function codingTask(rawInput: unknown, carry?: TaskCarry): Promise<CodingTaskResult> {
  foldPatches();
  const task = startTaskRun(rawInput, carry, claimWatch);
  const scope = new CancellationScope();
  answerTaskStatus(task);
  acceptAbort(task, () => scope.cancel());
  acceptTaskApprovals(task);
  publishTaskAttributes(task, 'state');
  showTaskDetails(task);
  startTaskDeadline(task);
  try {
    task.ended = await scope.run(() => runTask(task, rawInput));
  } catch (err) {
    task.ended = endOfFailedRun(task, err);
  }
  return CancellationScope.nonCancellable(() => finishTask(task));
}

async function runTask(task: TaskRun, rawInput: unknown): Promise<TaskEnd> {
  const { carry } = task;
  await claimTaskHost(task);
  if (!carry.prepared) {
    const end = await prepareTask(task);
    if (end) return end;
  }
  if (task.settings.revision) return reviseBranch(task);
  for (;;) {
    const end = reasonToStop(task);
    if (end) return end;
    const spent = spentTaskBudget(task);
    if (spent) {
      const notExtended = await taskEndUnlessExtended(task, spent);
      if (notExtended) return notExtended;
      continue;
    }
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof codingTask>(rawInput, carry);
    }
    const feature = carry.features.find((f) => !f.passes && carry.progress[f.id]?.skipped !== true)!;
    const stop = await attemptFeature(task, feature);
    if (stop) return stop;
  }
}

/**
 * Why the run stops before the next attempt: all pass, only skipped left, or the features planned
 * for this run are done (the spent budgets, which may ask, are `budget.ts`'s).
 */
function reasonToStop(task: TaskRun): TaskEnd | undefined {
  const { carry, settings } = task;
  const { budget } = settings;
  if (carry.features.every((f) => f.passes)) return new TaskEnd('completed', 'all features pass');
  if (carry.features.every((f) => f.passes || carry.progress[f.id]?.skipped))
    return new TaskEnd('completed', 'nothing left but skipped features');
  if (budget.featuresPerRun !== undefined && carry.finished.length >= budget.featuresPerRun)
    return new TaskEnd('completed', `budget: features per run (${budget.featuresPerRun})`);
  return undefined;
}

/** `agent abort <task id>`: stops the running operation and ends the task `aborted`, with its report. */
function acceptAbort(task: TaskRun, onAbort: () => void): void {
  setHandler(
    abortUpdate,
    ({ reason }) => {
      task.abortReason = reason?.trim() || 'requested by user';
      onAbort();
      return { accepted: true };
    },
    {
      validator: (_arg) => {
        if (task.ended || task.abortReason !== undefined) throw new Error('the task is no longer running');
      },
    },
  );
}

function endOfFailedRun(task: TaskRun, err: unknown): TaskEnd {
  if (isCancellation(err) || task.abortReason !== undefined) {
    return new TaskEnd('aborted', `aborted: ${task.abortReason ?? 'workflow cancelled'}`);
  }
  if (err instanceof ApplicationFailure && err.type === CODING_TASK_FAILURES.failed) {
    return new TaskEnd('failed', err.message);
  }
  if (err instanceof ActivityFailure) {
    const cause = err.cause;
    const type = cause instanceof ApplicationFailure && cause.type ? `${cause.type}: ` : '';
    return new TaskEnd('failed', `${type}${cause?.message ?? err.message}`);
  }
  throw err;
}

/** Writes the report into the workspace, removes the container (the volume stays), returns or fails with the result. */
async function finishTask(task: TaskRun): Promise<CodingTaskResult> {
  const { carry } = task;
  task.phase = 'finishing';
  task.current = undefined;
  showTaskDetails(task);
  const data = reportData(task);
  const report = renderTaskReport(data);
  let reportPath: string | undefined;
  // Best effort: the result carries the report either way, a container left behind is removed by
  // `agent sandbox gc`, and a host clone not released stays under AGENT_TASKS_DIR.
  if (carry.sandboxUsed) {
    reportPath = await taskWorkspace(task)
      .writeReport({ sessionId: task.sessionId, taskId: task.taskId, markdown: report })
      .then(
        (written) => written.path,
        () => undefined,
      );
    await taskSandbox(task)
      .destroySandbox({ sessionId: task.sessionId, keepVolume: true })
      .catch(() => undefined);
  }
  if (carry.prepared && carry.unpushed.length === 0) {
    await hostGit(task)
      .releaseHostRepository({ sessionId: task.sessionId })
      .catch(() => undefined);
  }
  await openPullRequest(task, data);
  task.phase = 'done';
  publishTaskAttributes(task, 'state');
  showTaskDetails(task);
  const result: CodingTaskResult = {
    ...data,
    ...(carry.pullRequest ? { pullRequest: carry.pullRequest } : {}),
    report,
    ...(reportPath ? { reportPath } : {}),
  };
  if (task.ended!.state === 'failed') {
    throw ApplicationFailure.create({
      type: CODING_TASK_FAILURES.failed,
      message: task.ended!.reason,
      nonRetryable: true,
      details: [result],
    });
  }
  return result;
}
