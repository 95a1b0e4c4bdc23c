/**
 * One attempt at one feature: a fresh operation whose goal the harness builds from the workspace
 * (HANDOFF.md, git log/status/diff, init.sh) and the feature; then the integrity guard; then the
 * harness's own verification (the feature's recorded `verify` and the task's regression command).
 * Only when both pass does the harness set `passes: true`, commit and push. A feature that fails
 * `maxAttemptsPerFeature` times is skipped: its last attempt's work is shelved under a ref and the
 * workspace goes back to the last accepted commit.
 */
import type { Feature } from '../../common/feature-list';
import type { RepoActivities, VerificationCheck, VerifyResult } from '../../common/repo';
import { featureGoal } from '../../common/task-prompts';
import { verifyActivityOptions } from '../shared/policies';
import { commitAndPush, guardWorkspace, taskHandsQueue, taskWorkspace } from './repo';
import { runTaskOperation } from './task-operation';
import { progressOf, TaskEnd, type TaskRun } from './state';
import { taskActivities } from './stuck';
import { showTaskDetails } from './visibility';

const GIT_LOG_COMMITS = 20;

/** Works once on `feature`; returns an end when the run must stop. */
export async function attemptFeature(task: TaskRun, feature: Feature): Promise<TaskEnd | undefined> {
  const { carry, settings } = task;
  const progress = progressOf(task, feature.id);
  const attempt = progress.attempts + 1;
  const operationId = `${task.taskId}.${feature.id}.${attempt}`;
  task.phase = 'feature';
  const snapshot = await taskWorkspace(task).workspaceSnapshot({
    sessionId: task.sessionId,
    logCount: GIT_LOG_COMMITS,
  });
  const goal = featureGoal({
    branch: task.branch,
    feature,
    attempt,
    maxAttempts: settings.budget.maxAttemptsPerFeature,
    passing: carry.features.filter((f) => f.passes).length,
    total: carry.features.length,
    ...(settings.verify ? { taskVerify: settings.verify } : {}),
    snapshot,
    ...(progress.lastError ? { previousFailure: progress.lastError } : {}),
    corrections: carry.corrections,
  });
  progress.attempts = attempt;
  const { entry, modelUnavailable } = await runTaskOperation(task, {
    kind: 'feature',
    operationId,
    goal,
    summary: `feature ${feature.id} (attempt ${attempt}): ${feature.description}`,
    featureId: feature.id,
    attempt,
  });
  if (modelUnavailable) return new TaskEnd('failed', `the model could not be reached: ${entry.reason}`);

  const { workKept } = await guardWorkspace(task, { operationId, featureId: feature.id, attempt });
  let failure: string | undefined;
  if (entry.state === 'aborted') failure = `the operation was aborted: ${entry.reason}`;
  else if (!workKept) failure = 'the history was rewritten, so the work was discarded (see the integrity notes)';
  else {
    // The harness verifies whatever the operation left, even when it ran out of turns.
    const verified = await verifyFeature(task, feature, operationId);
    entry.verified = verified.passed;
    if (!verified.passed) failure = describeFailedVerification(verified, entry.state, entry.reason);
  }
  if (failure === undefined) return acceptFeature(task, feature, operationId);

  entry.verifyError = failure;
  progress.failures += 1;
  progress.lastError = failure;
  if (progress.failures >= settings.budget.maxAttemptsPerFeature) await skipFeature(task, feature, attempt);
  task.current = undefined;
  showTaskDetails(task);
  return undefined;
}

async function verifyFeature(task: TaskRun, feature: Feature, key: string): Promise<VerifyResult> {
  const { settings } = task;
  const checks: VerificationCheck[] = [
    ...(feature.verify ? [{ name: 'feature' as const, command: feature.verify }] : []),
    ...(settings.verify ? [{ name: 'regression' as const, command: settings.verify }] : []),
  ];
  task.phase = 'verifying';
  showTaskDetails(task);
  const { verifyWorkspace } = taskActivities<RepoActivities>(task, {
    ...verifyActivityOptions(settings.verifyTimeoutMs, checks.length),
    taskQueue: taskHandsQueue(task),
    summary: `verify ${feature.id}`,
  });
  return verifyWorkspace({ sessionId: task.sessionId, key, checks, timeoutMs: settings.verifyTimeoutMs });
}

/** Why a verification did not pass: the first failing check, how it ended and the end of its output. */
export function describeFailedVerification(result: VerifyResult, state: string, reason: string): string {
  const failed = result.checks.find((check) => check.exitCode !== 0 || check.timedOut);
  const ended = state === 'completed' ? '' : `The operation ${state} (${reason}). `;
  if (!failed) return `${ended}The verification did not pass.`;
  const how = failed.timedOut ? 'timed out' : `exited ${failed.exitCode}`;
  return `${ended}The harness's ${failed.name} check \`${failed.command}\` ${how}; its output ended with:\n\n${failed.outputTail.trim() || '(no output)'}`;
}

async function acceptFeature(task: TaskRun, feature: Feature, operationId: string): Promise<TaskEnd | undefined> {
  const { carry } = task;
  const index = carry.features.findIndex((f) => f.id === feature.id);
  carry.features = carry.features.map((f, i) => (i === index ? { ...f, passes: true } : f));
  const committed = await commitAndPush(task, {
    operationId,
    featureId: feature.id,
    subject: `Feature ${feature.id}: ${oneLine(feature.description, 80)}`,
  });
  const progress = progressOf(task, feature.id);
  progress.passedThisRun = true;
  progress.commit = committed.sha;
  delete progress.lastError;
  carry.finished.push(feature.id);
  const entry = carry.ledger[carry.ledger.length - 1]!;
  entry.commit = committed.sha;
  if (committed.changedTestFiles.length) entry.changedTestFiles = committed.changedTestFiles;
  carry.corrections = [];
  task.current = undefined;
  showTaskDetails(task);
  return committed.end;
}

async function skipFeature(task: TaskRun, feature: Feature, attempt: number): Promise<void> {
  const progress = progressOf(task, feature.id);
  progress.skipped = true;
  task.carry.finished.push(feature.id);
  await taskWorkspace(task).shelveAttempt({
    sessionId: task.sessionId,
    branch: task.branch,
    acceptedCommit: task.carry.accepted,
    ref: `refs/agent/skipped/${feature.id}`,
    message: `Skipped ${feature.id} after ${attempt} attempts: the last attempt's work`,
  });
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
