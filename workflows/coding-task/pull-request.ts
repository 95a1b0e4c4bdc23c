/**
 * The end of a run on a forge repository: the branch's pull request, opened as a draft the first
 * time and updated in place by every later run (the morning report as its body), and the workflow
 * that looks after it (`pullRequestLoop`, one per pull request) started once.
 *
 * Histories recorded before forge repositories existed never reach this (their `repo` is never of
 * kind `forge`), so it needs no `patched()`.
 */
import {
  ApplicationFailure,
  ActivityFailure,
  getExternalWorkflowHandle,
  ParentClosePolicy,
  proxyActivities,
  startChild,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import { taskPullRequestSchema, type TaskReportData } from '../../common/coding-task';
import { pullRequestLoopId, type ForgeActivities } from '../../common/forge';
import { renderPullRequestBody } from '../../common/pull-request-body';
import {
  forgeTaskDefaultsSchema,
  PULL_REQUEST_LOOP_WORKFLOW_TYPE,
  pullRequestWakeSignal,
  WorkflowExecutionAlreadyStartedError,
  type PullRequestLoopInput,
} from '../../common/pull-request';
import { FORGE_ACTIVITY_OPTIONS } from '../shared/policies';
import type { TaskRun } from './state';

const forge = proxyActivities<ForgeActivities>(FORGE_ACTIVITY_OPTIONS);

/** Opens or updates the branch's pull request and starts its loop; records the outcome in the carry. */
export async function openPullRequest(task: TaskRun, data: TaskReportData): Promise<void> {
  const { settings, carry } = task;
  const repo = settings.repo;
  if (repo.kind !== 'forge' || settings.revision) return;
  const options = settings.pullRequest ?? taskPullRequestSchema.parse({});
  if (!carry.prepared || carry.pushed === null) {
    carry.pullRequest = { outcome: 'not opened', reason: 'nothing was pushed to the branch' };
    return;
  }
  const where = { forge: repo.forge, repository: repo.repository };
  try {
    const forgeSettings = await forge.forgeTaskSettings({ forge: repo.forge });
    const webUiUrl = forgeSettings.workflowsUrl
      ? `${forgeSettings.workflowsUrl}${encodeURIComponent(task.taskId)}`
      : undefined;
    const result = await forge.upsertPullRequest({
      ...where,
      head: task.branch,
      ...(options.base ? { base: options.base } : {}),
      title: options.title ?? titleOf(task),
      body: renderPullRequestBody({
        data: { ...data, pullRequest: undefined },
        ...(webUiUrl ? { webUiUrl } : {}),
        ...(options.issue ? { issue: options.issue } : {}),
      }),
      draft: options.draft,
      markerKey: `branch:${task.branch.replace(/[^A-Za-z0-9:._#/-]+/g, '-')}`.slice(0, 120),
    });
    const { pullRequest } = result;
    carry.pullRequest = { outcome: result.outcome, number: pullRequest.number, url: pullRequest.url };
    if (result.outcome === 'closed-before') {
      carry.pullRequest.reason = `a person closed #${pullRequest.number} for this branch: no new pull request was opened`;
      return;
    }
    if (options.loop) {
      carry.pullRequest.loopId = await startLoop(task, {
        ...where,
        number: pullRequest.number,
        branch: task.branch,
        task: loopTaskSettings(task),
        maxFixRounds: options.maxFixRounds,
        pollIntervalMs: options.pollIntervalMs,
      });
    }
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    const cause = err.cause instanceof ApplicationFailure ? `${err.cause.type}: ${err.cause.message}` : err.message;
    carry.pullRequest = { outcome: 'not opened', reason: cause };
  }
}

/** Starts the pull request's loop, or wakes the one a previous run started (one per pull request). */
async function startLoop(task: TaskRun, input: PullRequestLoopInput): Promise<string> {
  const loopId = pullRequestLoopId(input, input.number);
  try {
    await startChild(PULL_REQUEST_LOOP_WORKFLOW_TYPE, {
      workflowId: loopId,
      taskQueue: workflowInfo().taskQueue,
      args: [input],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      staticSummary: `pull request ${input.repository}#${input.number} (${input.branch})`.slice(0, 190),
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    // A later night: the loop is there already; it reads the pull request again.
    await getExternalWorkflowHandle(loopId)
      .signal(pullRequestWakeSignal, { reason: `task ${task.taskId} updated the branch` })
      .catch(() => undefined);
  }
  return loopId;
}

/** What the loop's review rounds run with: this task's own settings. */
function loopTaskSettings(task: TaskRun): PullRequestLoopInput['task'] {
  const { settings } = task;
  return forgeTaskDefaultsSchema.parse({
    ...(settings.verify ? { verify: settings.verify } : {}),
    verifyTimeoutMs: settings.verifyTimeoutMs,
    budget: {
      maxTurnsPerFeature: settings.budget.maxTurnsPerFeature,
      maxAttemptsPerFeature: settings.budget.maxAttemptsPerFeature,
      ...(settings.budget.maxCostUsd !== undefined ? { maxCostUsd: settings.budget.maxCostUsd } : {}),
      ...(settings.budget.maxTotalTokens !== undefined ? { maxTotalTokens: settings.budget.maxTotalTokens } : {}),
      ...(settings.budget.maxDurationMs !== undefined ? { maxDurationMs: settings.budget.maxDurationMs } : {}),
    },
    ...(settings.model ? { model: settings.model } : {}),
    ...(settings.handsTaskQueue ? { handsTaskQueue: settings.handsTaskQueue } : {}),
    egress: settings.egress,
    ...(settings.environment !== undefined ? { environment: settings.environment } : {}),
    ...(settings.hooks ? { hooks: settings.hooks } : {}),
    stuck: settings.stuck,
  });
}

function titleOf(task: TaskRun): string {
  const spec = task.settings.spec?.split('\n').find((line) => line.trim());
  const title = spec?.replace(/^#+\s*/, '').trim();
  if (title) return title.length > 100 ? `${title.slice(0, 99)}…` : title;
  return `Agent work on ${task.branch}`;
}
