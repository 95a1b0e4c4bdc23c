/**
 * The start of a coding-task run: the host prepares its clone and the branch, the branch is copied
 * into the workspace, and the harness's record of the feature list is established — read from the
 * branch (a later run: no initializer) or produced by an initializer operation on a branch that has
 * none (its list validated, then committed and pushed as the branch's first commit).
 */
import { ActivityFailure, ApplicationFailure, isCancellation } from '@temporalio/workflow';
import { isPatched } from '../shared/patches';
import { taskRepoCacheKey } from '../../common/coding-task';
import type { PreparedEnvironment } from '../../common/environment';
import { checkNewFeatureList, parseFeatureList, type Feature } from '../../common/feature-list';
import { initializerGoal } from '../../common/task-prompts';
import { commitAndPush, guardWorkspace, hostGit, taskEnvironment, taskWorkspace } from './repo';
import { runTaskOperation } from './task-operation';
import { taskFailure, TaskEnd, type TaskRun } from './state';
import { showTaskDetails } from './visibility';

/** Task runs recorded before environments seeded their workspace straight into the default image. */
export const TASK_ENVIRONMENT_PATCH = 'task-workspace-environment';

/** Prepares the run; returns an end when the run cannot go on (its failures throw `taskFailure`). */
export async function prepareTask(task: TaskRun): Promise<TaskEnd | undefined> {
  const { carry, settings } = task;
  task.phase = 'preparing';
  showTaskDetails(task);
  const prepared = await hostGit(task).prepareRepository({
    taskId: task.taskId,
    sessionId: task.sessionId,
    repo: settings.repo,
    branch: task.branch,
    ...(settings.specPath ? { specPath: settings.specPath } : {}),
  });
  carry.prepared = {
    remote: prepared.remote,
    startCommit: prepared.startCommit,
    branchExisted: prepared.branchExisted,
    hostRepository: prepared.hostRepository,
  };
  if (prepared.repositoryHooks) carry.repositoryHooks = prepared.repositoryHooks;
  carry.accepted = prepared.startCommit;
  carry.pushed = prepared.branchExisted ? prepared.startCommit : null;
  carry.sandboxUsed = true;
  const environment = isPatched(TASK_ENVIRONMENT_PATCH) ? await prepareEnvironment(task) : undefined;
  await taskWorkspace(task).seedBranch({
    sessionId: task.sessionId,
    operationId: task.taskId,
    branch: task.branch,
    commit: prepared.startCommit,
  });
  if (environment?.update.length) await setUpWorkspace(task, environment.update);

  if (prepared.featureListText !== undefined) {
    const parsed = parseFeatureList(prepared.featureListText);
    if (!parsed.ok) {
      throw taskFailure(
        `the feature list on branch ${task.branch} at ${prepared.startCommit.slice(0, 12)} is malformed: ${parsed.error}`,
      );
    }
    carry.features = parsed.features;
    carry.initializer = 'not needed';
    return undefined;
  }
  if (settings.revision) {
    // A review round on a branch no task made: no feature list, and none is made.
    if (!prepared.branchExisted)
      throw taskFailure(
        `the branch ${task.branch} does not exist on the remote: a revision works on an existing branch`,
      );
    carry.noFeatureList = true;
    carry.initializer = 'not needed';
    return undefined;
  }
  const spec = settings.spec ?? prepared.spec?.text;
  if (spec === undefined) {
    throw taskFailure(
      `the branch ${task.branch} has no feature_list.json yet, so the initializer needs a specification: give spec or specPath`,
    );
  }
  return initialize(task, {
    text: spec,
    truncated: settings.spec === undefined && prepared.spec?.truncated === true,
    ...(settings.specPath ? { path: settings.specPath } : {}),
  });
}

/**
 * The workspace's environment, before the branch is copied in: from the input, the branch's
 * devcontainer.json, or detection from the files at the start commit (built on the hands host once
 * per content hash). A definition that cannot be built fails the task, naming what is wrong.
 */
async function prepareEnvironment(task: TaskRun): Promise<PreparedEnvironment> {
  const { carry, settings } = task;
  const prepared = carry.prepared!;
  task.phase = 'environment';
  showTaskDetails(task);
  const repo = settings.repo;
  try {
    const environment = await taskEnvironment(task, 'prepare the environment').prepareEnvironment({
      sessionId: task.sessionId,
      operationId: task.taskId,
      repository: { kind: 'host-clone', path: prepared.hostRepository, commit: prepared.startCommit },
      ...(settings.environment !== undefined ? { environment: settings.environment } : {}),
      cacheKey: taskRepoCacheKey(repo),
    });
    carry.environment = environment;
    task.phase = 'preparing';
    showTaskDetails(task);
    return environment;
  } catch (err) {
    throw environmentFailure('prepared', err);
  }
}

async function setUpWorkspace(task: TaskRun, commands: readonly string[]): Promise<void> {
  try {
    await taskEnvironment(task, `set the workspace up (${commands.length} update commands)`).setUpWorkspace({
      sessionId: task.sessionId,
      operationId: task.taskId,
      commands: [...commands],
    });
  } catch (err) {
    throw environmentFailure('set up', err);
  }
}

function environmentFailure(what: string, err: unknown): unknown {
  if (isCancellation(err) || !(err instanceof ActivityFailure)) return err;
  const cause = err.cause;
  const type = cause instanceof ApplicationFailure && cause.type ? `${cause.type}: ` : '';
  return taskFailure(`the environment could not be ${what}: ${type}${cause?.message ?? err.message}`);
}

async function initialize(
  task: TaskRun,
  spec: { text: string; truncated: boolean; path?: string },
): Promise<TaskEnd | undefined> {
  const { carry, settings } = task;
  task.phase = 'initializing';
  const operationId = `${task.taskId}.init`;
  const goal = initializerGoal({ branch: task.branch, spec, ...(settings.verify ? { verify: settings.verify } : {}) });
  const { entry, modelUnavailable } = await runTaskOperation(task, {
    kind: 'initializer',
    operationId,
    goal,
    summary: `initializer: feature list for ${task.branch}`,
  });
  carry.initializer = 'ran';
  if (modelUnavailable) return new TaskEnd('failed', `the initializer could not reach the model: ${entry.reason}`);
  if (entry.state !== 'completed') return new TaskEnd('failed', `the initializer ${entry.state}: ${entry.reason}`);

  const features = await acceptedFeatureList(task);
  carry.features = features;
  await guardWorkspace(task, { operationId });
  const committed = await commitAndPush(task, {
    operationId,
    subject: `Initialize the coding task: ${features.length} features, init.sh, HANDOFF.md`,
  });
  entry.commit = committed.sha;
  if (committed.changedTestFiles.length) entry.changedTestFiles = committed.changedTestFiles;
  return committed.end;
}

/** The initializer's feature list, validated; every `passes` starts false (only the harness sets it). */
async function acceptedFeatureList(task: TaskRun): Promise<Feature[]> {
  const { text } = await taskWorkspace(task).readFeatureList({ sessionId: task.sessionId });
  if (text === undefined) throw taskFailure('the initializer wrote no feature_list.json');
  const parsed = parseFeatureList(text);
  if (!parsed.ok) throw taskFailure(`the initializer's feature list is malformed: ${parsed.error}`);
  const problem = checkNewFeatureList(parsed.features, task.settings.verify);
  if (problem) throw taskFailure(`the initializer's feature list is malformed: ${problem}`);
  return parsed.features.map((feature) => ({ ...feature, passes: false }));
}
