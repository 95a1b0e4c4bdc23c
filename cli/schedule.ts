/**
 * `agent schedule …`: coding tasks on Temporal Schedules. A schedule starts the task (workflow id
 * `task-<name>-<time>`) on its cron; a run still going when the next is due makes the next one skip
 * (overlap SKIP); runs missed while the server was down are caught up within the catch-up window; a
 * failed run pauses the schedule until someone unpauses it. Every run of a schedule works on the
 * same branch (default `agent/<name>`), so the next run resumes from its feature list and handoff.
 */
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleDescription,
} from '@temporalio/client';
import { connectClient, type QueueSettings } from '../client/connection';
import { CODING_TASK_WORKFLOW_TYPE } from '../common/coding-task';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import type { ScheduleCommand } from './command-types';
import { cliSettings } from './settings';
import { repoLabel, taskInput } from './task';

/** What the schedule's memo records, for `agent schedule ls`. */
interface ScheduleMemo {
  cron: string;
  timezone?: string;
  repo: string;
  branch: string;
}

export async function scheduleCommand(command: ScheduleCommand): Promise<number> {
  const { temporal, queues } = cliSettings();
  const { client, connection } = await connectClient(temporal);
  try {
    return await run(client, queues, command);
  } catch (err) {
    if (err instanceof ScheduleNotFoundError && 'name' in command) throw new Error(`no schedule named ${command.name}`);
    throw err;
  } finally {
    await connection.close();
  }
}

async function run(client: Client, queues: QueueSettings, command: ScheduleCommand): Promise<number> {
  switch (command.kind) {
    case 'schedule-create':
      return create(client, queues, command);
    case 'schedule-ls':
      return list(client);
    case 'schedule-pause':
      await client.schedule.getHandle(command.name).pause(command.note ?? 'paused with agent schedule pause');
      console.log(`schedule ${command.name} paused`);
      return 0;
    case 'schedule-unpause':
      await client.schedule.getHandle(command.name).unpause(command.note ?? 'unpaused with agent schedule unpause');
      console.log(`schedule ${command.name} unpaused`);
      return 0;
    case 'schedule-trigger':
      return trigger(client, command.name);
    case 'schedule-delete':
      await client.schedule.getHandle(command.name).delete();
      console.log(`schedule ${command.name} deleted (runs already started go on)`);
      return 0;
  }
}

async function create(
  client: Client,
  queues: QueueSettings,
  command: Extract<ScheduleCommand, { kind: 'schedule-create' }>,
): Promise<number> {
  if (command.timezone !== undefined) checkTimezone(command.timezone);
  const branch = command.task.branch ?? `agent/${command.name}`;
  const input = taskInput({ ...command.task, branch }, queues.hands);
  const memo: ScheduleMemo = {
    cron: command.cron,
    ...(command.timezone ? { timezone: command.timezone } : {}),
    repo: repoLabel(input),
    branch,
  };
  try {
    await client.schedule.create({
      scheduleId: command.name,
      spec: { cronExpressions: [command.cron], ...(command.timezone ? { timezone: command.timezone } : {}) },
      action: {
        type: 'startWorkflow',
        workflowType: CODING_TASK_WORKFLOW_TYPE,
        taskQueue: queues.brain,
        workflowId: `task-${command.name}`,
        args: [input],
        staticSummary: `coding task ${command.name} on ${memo.repo}`.slice(0, 190),
        typedSearchAttributes: [
          { key: SEARCH_ATTRIBUTES.status, value: 'running' },
          { key: SEARCH_ATTRIBUTES.kind, value: 'coding-task' },
          { key: SEARCH_ATTRIBUTES.repo, value: memo.repo },
        ],
      },
      policies: {
        overlap: ScheduleOverlapPolicy.SKIP,
        catchupWindow: command.catchupWindowMs,
        pauseOnFailure: command.pauseOnFailure,
      },
      memo: { ...memo },
      state: { note: `coding task on ${memo.repo}, branch ${branch}` },
    });
  } catch (err) {
    if (err instanceof ScheduleAlreadyRunning)
      throw new Error(
        `a schedule named ${command.name} exists: delete it first (agent schedule delete ${command.name})`,
      );
    throw new Error(`schedule ${command.name}: ${(err as Error).message}`);
  }
  const next = (await client.schedule.getHandle(command.name).describe()).info.nextActionTimes[0];
  console.log(
    `schedule ${command.name} created: "${command.cron}"${command.timezone ? ` (${command.timezone})` : ' (UTC)'} · branch ${branch} · next run ${next ? next.toISOString() : 'none'}`,
  );
  return 0;
}

function checkTimezone(timezone: string): void {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    throw new Error(`--timezone ${timezone}: not a time zone (use an IANA name like Europe/Paris or UTC)`);
  }
}

async function list(client: Client): Promise<number> {
  const rows: string[] = [];
  for await (const summary of client.schedule.list()) {
    const memo = (summary.memo ?? {}) as Partial<ScheduleMemo>;
    const last = summary.info.recentActions[summary.info.recentActions.length - 1];
    rows.push(
      [
        summary.scheduleId,
        summary.state.paused ? 'paused' : 'active',
        memo.cron ? `"${memo.cron}"${memo.timezone ? ` ${memo.timezone}` : ''}` : '-',
        `next ${summary.info.nextActionTimes[0]?.toISOString() ?? '-'}`,
        `last ${last ? last.action.workflow.workflowId : '-'}`,
        memo.branch ? `branch ${memo.branch}` : '',
        summary.state.paused && summary.state.note ? `(${summary.state.note})` : '',
      ]
        .filter(Boolean)
        .join('  '),
    );
  }
  console.log(rows.length ? rows.join('\n') : 'no schedules');
  return 0;
}

/** Starts a run now (skipped if one is still going) and prints its workflow id. */
async function trigger(client: Client, name: string): Promise<number> {
  const handle = client.schedule.getHandle(name);
  const before = await handle.describe();
  const runningNow = before.info.runningActions[0];
  if (runningNow) {
    console.error(`schedule ${name}: a run is still going (${runningNow.workflow.workflowId}); not starting another`);
    return 1;
  }
  await handle.trigger(ScheduleOverlapPolicy.SKIP);
  const started = await waitForNewAction(handle.describe.bind(handle), before);
  console.log(
    started
      ? `schedule ${name} triggered: task ${started} started (its report: agent report ${started})`
      : `schedule ${name} triggered`,
  );
  return 0;
}

async function waitForNewAction(
  describe: () => Promise<ScheduleDescription>,
  before: ScheduleDescription,
): Promise<string | undefined> {
  const known = new Set(before.info.recentActions.map((action) => action.action.workflow.workflowId));
  for (let i = 0; i < 50; i++) {
    const now = await describe();
    const fresh = [
      ...now.info.runningActions.map((a) => a.workflow.workflowId),
      ...now.info.recentActions.map((a) => a.action.workflow.workflowId),
    ].find((id) => !known.has(id));
    if (fresh) return fresh;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return undefined;
}
