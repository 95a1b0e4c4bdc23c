/**
 * `agent task start`: submits a coding task and follows it — one line per change (phase, feature,
 * attempt, features passing, commits, tokens, cost, elapsed) — then prints the morning report.
 * Ctrl-C detaches without stopping it (`agent report <id>` shows it later; `agent abort <id>` stops it).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { connectClient, workflowUrl } from '../client/connection';
import { pendingActivityDetails } from '../client/activity-progress';
import { requirePollers } from '../client/pollers';
import { codingTaskResult } from '../client/task-result';
import {
  CODING_TASK_WORKFLOW_TYPE,
  defaultTaskBranch,
  taskRepoLabel,
  parseCodingTaskInput,
  taskStatusQuery,
  type CodingTaskInput,
  type CodingTaskStatus,
} from '../common/coding-task';
import { totalTokens } from '../common/model-types';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import type { TaskStartCommand } from './command-types';
import { formatElapsed, formatTokens } from './follow';
import { cliSettings } from './settings';
import type { TaskSpecArgs } from './task-args';

/**
 * The workflow input the command line describes, validated like the workflow validates it; its hands
 * run on `handsQueue` (`AGENT_HANDS_QUEUE`, like the workers').
 */
export function taskInput(task: TaskSpecArgs, handsQueue: string): CodingTaskInput {
  let repo: CodingTaskInput['repo'] = task.repo;
  if (task.repo.kind === 'local') {
    const dir = path.resolve(task.repo.path);
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory())
      throw new Error(`--repo ${task.repo.path}: no such directory`);
    repo = { kind: 'local', path: dir };
  }
  const input: CodingTaskInput = {
    repo,
    ...(task.branch ? { branch: task.branch } : {}),
    ...(task.spec ? { spec: task.spec } : {}),
    ...(task.specPath ? { specPath: task.specPath } : {}),
    ...(task.verify ? { verify: task.verify } : {}),
    ...(task.verifyTimeoutMs ? { verifyTimeoutMs: task.verifyTimeoutMs } : {}),
    ...(task.model ? { model: task.model } : {}),
    ...(task.egress ? { egress: task.egress } : {}),
    ...(task.environment !== undefined ? { environment: task.environment } : {}),
    ...(task.hooks ? { hooks: task.hooks } : {}),
    ...(Object.keys(task.budget).length ? { budget: task.budget } : {}),
    handsTaskQueue: handsQueue,
  };
  const checked = parseCodingTaskInput(input);
  if (!checked.ok) throw new Error(`invalid task: ${checked.error}`);
  return input;
}

export function repoLabel(input: CodingTaskInput): string {
  return taskRepoLabel(input.repo);
}

export async function taskStart(command: TaskStartCommand): Promise<number> {
  const { temporal: settings, queues } = cliSettings();
  const input = taskInput(command.task, queues.hands);
  const { client, connection } = await connectClient(settings);
  const workers = command.withWorker ? await (await import('../workers/run')).startWorkers('dev') : undefined;
  const running = workers?.run();
  try {
    if (!workers) await requirePollers(client, queues.brain);
    const taskId =
      command.id ?? `task-${new Date().toISOString().slice(0, 19).replace(/[-:T]/g, '')}-${randomUUID().slice(0, 6)}`;
    const handle = await client.workflow.start(CODING_TASK_WORKFLOW_TYPE, {
      taskQueue: queues.brain,
      workflowId: taskId,
      args: [input],
      staticSummary: `coding task on ${repoLabel(input)}`.slice(0, 190),
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.status, value: 'running' },
        { key: SEARCH_ATTRIBUTES.kind, value: 'coding-task' },
        { key: SEARCH_ATTRIBUTES.repo, value: repoLabel(input) },
      ],
    });
    const url = workflowUrl(settings, taskId, handle.firstExecutionRunId);
    console.log(`task ${taskId} accepted · branch ${input.branch ?? defaultTaskBranch(taskId)}`);
    console.log(`Web UI: ${url}`);
    if (command.detach) return 0;
    const outcome = await followTask(handle, { detachOnSigint: !workers });
    if (outcome === 'detached') {
      console.log(`\ndetached; the task keeps running. Its report: agent report ${taskId}`);
      return 0;
    }
    const result = await codingTaskResult(handle);
    console.log(`\n${result.report}`);
    return result.state === 'completed' ? 0 : 1;
  } finally {
    if (workers) {
      workers.shutdown();
      await running;
      await workers.close();
    }
    await connection.close();
  }
}

export function formatTaskProgress(status: CodingTaskStatus, elapsedMs: number): string {
  const current = status.current?.featureId
    ? ` · ${status.current.featureId} (attempt ${status.current.attempt})`
    : status.current
      ? ' · initializer'
      : '';
  const waiting = status.waitingApproval
    ? ` · waiting for approval: ${status.waitingApproval.summary} (${status.waitingApproval.toolCallId})`
    : '';
  const stuck = status.stuck ? ` · ⚠ ${status.stuck.reason}` : '';
  return `${status.phase}${current}${waiting}${stuck} · ${status.passing}/${status.total} pass · ${status.commitsPushed} commits · ${formatTokens(totalTokens(status.usage))} tokens · $${status.costUsd.toFixed(4)} · ${formatElapsed(elapsedMs)}`;
}

/** Polls the task's status until it closes (or Ctrl-C, when allowed), printing each change. */
export async function followTask(
  handle: WorkflowHandle,
  options: { detachOnSigint: boolean; print?: (line: string) => void },
): Promise<'closed' | 'detached'> {
  const print = options.print ?? ((line: string) => console.log(line));
  let detached = false;
  const onSigint = () => {
    detached = true;
  };
  if (options.detachOnSigint) process.once('SIGINT', onSigint);
  let closed = false;
  const done = handle.result().then(
    () => void (closed = true),
    () => void (closed = true),
  );
  let last = '';
  let lastBuild = '';
  let shownEnvironment: string | undefined;
  try {
    while (!closed && !detached) {
      try {
        const status = await handle.query(taskStatusQuery);
        const line = formatTaskProgress(status, Date.now() - Date.parse(status.startedAt));
        const key = line.replace(/ · \d\d:\d\d$/, '');
        if (key !== last) print(line);
        last = key;
        if (status.phase === 'environment') lastBuild = await printBuildProgress(handle, lastBuild, print);
        if (status.environment && status.environment !== shownEnvironment) print(`environment: ${status.environment}`);
        shownEnvironment = status.environment;
      } catch {
        // No worker has picked the task up yet: keep polling.
      }
      await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 1_000))]);
    }
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
  return closed ? 'closed' : 'detached';
}

/** The environment build's step and last lines, as its heartbeat says them, when they changed. */
async function printBuildProgress(
  handle: WorkflowHandle,
  last: string,
  print: (line: string) => void,
): Promise<string> {
  const details = await pendingActivityDetails(handle, 'prepareEnvironment');
  const step = typeof details?.environment === 'string' ? details.environment : '';
  const tail = Array.isArray(details?.tail)
    ? details.tail.filter((line): line is string => typeof line === 'string')
    : [];
  if (!step || step === last) return last;
  print(`  ⚙ ${step}${tail.length ? `\n      ${tail.slice(-3).join('\n      ')}` : ''}`);
  return step;
}

/** `agent status <task id>`: the task's progress while it runs, its outcome when it ended. */
export async function taskStatus(handle: WorkflowHandle, state: string, json: boolean, url: string): Promise<number> {
  if (state === 'RUNNING') {
    const status = await handle.query(taskStatusQuery);
    if (json) console.log(JSON.stringify({ ...status, report: undefined }, null, 2));
    else
      console.log(
        `${handle.workflowId}: ${status.state} — ${formatTaskProgress(status, Date.now() - Date.parse(status.startedAt))}\nWeb UI: ${url}`,
      );
    return 0;
  }
  const result = await codingTaskResult(handle);
  const passing = result.features.filter((f) => f.passes).length;
  if (json) console.log(JSON.stringify({ ...result, report: undefined }, null, 2));
  else
    console.log(
      `${handle.workflowId}: ${result.state} — ${result.reason} (${passing}/${result.features.length} features pass, ${result.commits.length} commits pushed)\nreport: agent report ${handle.workflowId}\nWeb UI: ${url}`,
    );
  return 0;
}
