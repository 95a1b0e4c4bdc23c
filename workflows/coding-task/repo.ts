/**
 * The task's side of the repository: the repo activities on the hands queue with their presets, and
 * the two steps every accepted operation ends with — the integrity guard after the operation, and
 * the commit and push once the harness accepted its work.
 */
import type { IntegrityNote, TaskCommit } from '../../common/coding-task';
import { describeViolation } from '../../common/feature-list';
import type { EnvironmentActivities } from '../../common/environment';
import type { HandsActivities } from '../../common/hands';
import type { RepoActivities } from '../../common/repo';
import {
  ENVIRONMENT_ACTIVITY_OPTIONS,
  HOST_GIT_ACTIVITY_OPTIONS,
  SANDBOX_ACTIVITY_OPTIONS,
  TASK_WORKSPACE_ACTIVITY_OPTIONS,
} from '../shared/policies';
import { featureRecord, TaskEnd, type TaskRun } from './state';
import { taskActivities } from './stuck';

/**
 * The queue of the hands host holding the task's workspace (claimed by `claimTaskHost` at the start
 * of every run); the shared hands queue in runs that predate routing.
 */
export function taskHandsQueue(task: TaskRun): string {
  return task.route.knownQueue() ?? task.handsQueue;
}

/** Claims the task's hands host when none is known yet (a no-op in runs that predate routing). */
export async function claimTaskHost(task: TaskRun): Promise<void> {
  await task.route.queue();
}

export function hostGit(task: TaskRun) {
  return taskActivities<RepoActivities>(task, { ...HOST_GIT_ACTIVITY_OPTIONS, taskQueue: taskHandsQueue(task) });
}

export function taskWorkspace(task: TaskRun) {
  return taskActivities<RepoActivities>(task, { ...TASK_WORKSPACE_ACTIVITY_OPTIONS, taskQueue: taskHandsQueue(task) });
}

/** The environment activities on the task's hands host (`summary`: what the Web UI shows). */
export function taskEnvironment(task: TaskRun, summary: string) {
  return taskActivities<EnvironmentActivities>(task, {
    ...ENVIRONMENT_ACTIVITY_OPTIONS,
    taskQueue: taskHandsQueue(task),
    summary,
  });
}

export function taskSandbox(task: TaskRun) {
  return taskActivities<HandsActivities>(task, { ...SANDBOX_ACTIVITY_OPTIONS, taskQueue: taskHandsQueue(task) });
}

/**
 * Runs the integrity guard after an operation and records what it corrected (also for the next
 * operation's goal). Returns whether the operation's work is still in the workspace (a history
 * rewrite resets the workspace to the accepted commit).
 */
export async function guardWorkspace(
  task: TaskRun,
  where: { operationId: string; featureId?: string; attempt?: number },
): Promise<{ workKept: boolean }> {
  const { carry } = task;
  const result = await taskWorkspace(task).checkWorkspace({
    sessionId: task.sessionId,
    branch: task.branch,
    acceptedCommit: carry.accepted,
    features: featureRecord(task),
  });
  const notes: IntegrityNote[] = result.violations.map((violation) => ({
    ...where,
    violation,
    action: `${violation.kind === 'passes-changed' ? 'reverted' : 'restored'} from the harness's record`,
  }));
  if (result.historyRewritten) {
    notes.unshift({
      ...where,
      violation: { kind: 'history-rewritten', detail: result.historyRewritten },
      action: "the branch was reset to the last accepted commit; this attempt's work was not accepted",
    });
  }
  carry.integrity.push(...notes);
  carry.corrections = notes.map((note) =>
    note.violation.kind === 'history-rewritten'
      ? `the history was rewritten: ${note.violation.detail}`
      : `${describeViolation(note.violation)}: ${note.action}`,
  );
  return { workKept: !result.historyRewritten };
}

/**
 * Commits the accepted work as one commit on top of the last accepted one and pushes the branch
 * from the host. Returns a `failed` end when the remote refused the push (the commit is kept).
 */
export async function commitAndPush(
  task: TaskRun,
  commit: { operationId: string; subject: string; featureId?: string; skipIfUnchanged?: boolean },
): Promise<{ sha: string; changedTestFiles: string[]; end?: TaskEnd; unchanged?: boolean }> {
  const { carry } = task;
  task.phase = 'pushing';
  const parent = carry.accepted;
  const accepted = await taskWorkspace(task).commitAccepted({
    sessionId: task.sessionId,
    branch: task.branch,
    parent,
    features: featureRecord(task),
    ...(commit.skipIfUnchanged ? { skipIfUnchanged: true } : {}),
    subject: commit.subject,
    trailers: {
      'Agent-Task': task.taskId,
      ...(commit.featureId ? { 'Agent-Feature': commit.featureId } : {}),
      'Agent-Operation': commit.operationId,
    },
  });
  if (accepted.unchanged) return { sha: parent, changedTestFiles: [], unchanged: true };
  carry.accepted = accepted.commit;
  const record: TaskCommit = {
    sha: accepted.commit,
    subject: commit.subject,
    ...(commit.featureId ? { featureId: commit.featureId } : {}),
  };
  if (carry.unpushed.length > 0) {
    carry.unpushed.push(record);
    return { sha: accepted.commit, changedTestFiles: accepted.changedTestFiles };
  }
  const pushed = await hostGit(task).pushBranch({
    sessionId: task.sessionId,
    repo: task.settings.repo,
    branch: task.branch,
    expected: carry.pushed,
    base: parent,
    commit: accepted.commit,
  });
  if (!pushed.pushed) {
    carry.unpushed.push(record);
    return {
      sha: accepted.commit,
      changedTestFiles: accepted.changedTestFiles,
      end: new TaskEnd('failed', pushed.message),
    };
  }
  carry.pushed = accepted.commit;
  carry.commits.push(record);
  return { sha: accepted.commit, changedTestFiles: accepted.changedTestFiles };
}
