/**
 * What a coding task shows while it runs and when it ends: the `taskStatus` query (with the report
 * as it would read now), the Web UI's current details, the search attributes, and the report data
 * the morning report is rendered from.
 */
import { describeEnvironment } from '../../common/environment';
import { setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import { taskRepoLabel, taskStatusQuery, type CodingTaskStatus, type TaskReportData } from '../../common/coding-task';
import { totalTokens } from '../../common/model-types';
import { volumeNameOf } from '../../common/sandbox-names';
import { SEARCH_ATTRIBUTES, type AgentStatus } from '../../common/search-attributes';
import { renderTaskReport } from '../../common/task-report';
import type { TaskRun } from './state';

export function reportData(task: TaskRun): TaskReportData {
  const { carry } = task;
  return {
    taskId: task.taskId,
    state: task.ended?.state ?? 'completed',
    reason: task.ended?.reason ?? 'still running',
    remote: carry.prepared?.remote ?? describeRepo(task),
    branch: task.branch,
    initializer: carry.initializer,
    startCommit: carry.prepared?.startCommit ?? '',
    endCommit: carry.accepted,
    features: carry.features.map((feature) => {
      const progress = carry.progress[feature.id];
      return {
        id: feature.id,
        description: feature.description,
        passes: feature.passes,
        passedThisRun: progress?.passedThisRun === true,
        attempts: progress?.attempts ?? 0,
        skipped: progress?.skipped === true,
        ...(progress?.lastError ? { lastError: progress.lastError } : {}),
        ...(progress?.commit ? { commit: progress.commit } : {}),
      };
    }),
    commits: carry.commits,
    unpushed: carry.unpushed,
    integrity: carry.integrity,
    ledger: carry.ledger,
    usage: carry.usage,
    costUsd: carry.costUsd,
    wallMs: Date.now() - carry.startedAtMs,
    sessionId: task.sessionId,
    workspaceVolume: volumeNameOf(task.sessionId),
    ...(carry.prepared && carry.unpushed.length > 0 ? { hostRepository: carry.prepared.hostRepository } : {}),
    ...(carry.environment ? { environment: carry.environment } : {}),
    ...(carry.pullRequest ? { pullRequest: carry.pullRequest } : {}),
    ...(carry.revision?.outcome ? { revision: carry.revision.outcome } : {}),
  };
}

function describeRepo(task: TaskRun): string {
  return taskRepoLabel(task.settings.repo);
}

export function taskStatus(task: TaskRun): CodingTaskStatus {
  const { carry } = task;
  const data = reportData(task);
  return {
    state: task.ended?.state ?? (task.waitingApproval ? 'waiting-approval' : 'running'),
    phase: task.phase,
    branch: task.branch,
    ...(task.current ? { current: task.current } : {}),
    total: carry.features.length,
    passing: carry.features.filter((f) => f.passes).length,
    passedThisRun: data.features.filter((f) => f.passedThisRun).length,
    skipped: data.features.filter((f) => f.skipped).length,
    commitsPushed: carry.commits.length,
    usage: carry.usage,
    costUsd: carry.costUsd,
    startedAt: new Date(carry.startedAtMs).toISOString(),
    report: renderTaskReport(data),
    ...(carry.environment ? { environment: describeEnvironment(carry.environment) } : {}),
    ...(task.waitingApproval ? { waitingApproval: task.waitingApproval } : {}),
    ...(task.stuck && !task.ended ? { stuck: task.stuck } : {}),
  };
}

/** `AgentStatus`: the terminal state, `waiting-approval`, `stuck` while a running task is stuck, or `running`. */
function agentStatus(task: TaskRun): AgentStatus {
  if (task.ended) return task.ended.state;
  if (task.waitingApproval) return 'waiting-approval';
  return task.stuck ? 'stuck' : 'running';
}

export function answerTaskStatus(task: TaskRun): void {
  setHandler(taskStatusQuery, () => taskStatus(task));
}

export function publishTaskAttributes(task: TaskRun, what: 'state' | 'counters'): void {
  const { carry } = task;
  upsertSearchAttributes([
    ...(what === 'state'
      ? [
          { key: SEARCH_ATTRIBUTES.status, value: agentStatus(task) },
          { key: SEARCH_ATTRIBUTES.kind, value: 'coding-task' },
          { key: SEARCH_ATTRIBUTES.repo, value: carry.prepared?.remote ?? describeRepo(task) },
        ]
      : []),
    { key: SEARCH_ATTRIBUTES.tokens, value: totalTokens(carry.usage) },
    { key: SEARCH_ATTRIBUTES.costUsd, value: Math.round(carry.costUsd * 1e6) / 1e6 },
  ]);
}

/** The Web UI's "Current Details": phase, current feature, features passing, commits, tokens and cost. */
export function showTaskDetails(task: TaskRun): void {
  const status = taskStatus(task);
  const current = status.current?.featureId
    ? ` · feature \`${status.current.featureId}\` attempt ${status.current.attempt}`
    : status.current
      ? ` · ${status.current.operationId}`
      : '';
  const approval = status.waitingApproval;
  setCurrentDetails(
    [
      `**${agentStatus(task)}**${task.ended ? ` — ${task.ended.reason}` : ''} · ${status.phase}${current}`,
      ...(approval
        ? [
            `**waiting for approval:** \`${approval.summary}\`; ends at ${approval.timeoutAt} unless decided — \`agent approve ${task.taskId} ${approval.toolCallId}\` or \`--deny "why"\``,
          ]
        : []),
      ...(status.stuck
        ? [
            `⚠ **${status.stuck.reason}** (since ${status.stuck.since})${status.stuck.lastFailure ? ` — last failure: \`${status.stuck.lastFailure.slice(0, 300)}\`` : ''}`,
          ]
        : []),
      `branch \`${task.branch}\` · ${status.passing}/${status.total} features pass (${status.passedThisRun} this run, ${status.skipped} skipped) · ${status.commitsPushed} commits pushed`,
      `tokens: ${totalTokens(status.usage)} · $${status.costUsd.toFixed(4)}`,
      ...(task.carry.environment ? [`environment: ${describeEnvironment(task.carry.environment)}`] : []),
    ].join('\n\n'),
  );
}
