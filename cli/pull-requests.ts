/**
 * `agent pr …`: the pull requests the harness looks after (one `pullRequestLoop` each) —
 * `ls` (from the `AgentPr` and `AgentPrState` search attributes), `status`, and `pause`, `resume`,
 * `end` (Updates: the answer comes once the loop has recorded them). `agent webhook serve` runs the
 * webhook receiver; `agent forge poll` starts (or stops) the polling fallback of one repository.
 */
import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { connectClient, workflowUrl } from '../client/connection';
import {
  FORGE_POLLER_WORKFLOW_TYPE,
  forgePollerId,
  pullRequestLoopId,
  REPOSITORY_NAME,
  FORGE_NAME,
} from '../common/forge';
import { pullRequestControlUpdate, pullRequestStatusQuery, type PullRequestLoopStatus } from '../common/pull-request';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import type { PullRequestCommand } from './command-types';
import { cliSettings, forgeReceiverSettings } from './settings';
import { UsageError } from './usage-error';

/** A loop's workflow id, or `<forge>:<owner>/<name>#<number>` made into one. */
export function loopIdOf(text: string): string {
  const match = /^([^:\s]+):([^#\s]+)#(\d+)$/.exec(text);
  if (!match) return text;
  const [, forge, repository, number] = match;
  if (!FORGE_NAME.test(forge!) || !REPOSITORY_NAME.test(repository!))
    throw new UsageError(`"${text}" is not <forge>:<owner>/<name>#<number>`);
  return pullRequestLoopId({ forge: forge!, repository: repository! }, Number(number));
}

/** `<forge>:<owner>/<name>` → its parts. */
export function forgeRepositoryOf(text: string): { forge: string; repository: string } {
  const match = /^([^:\s]+):(\S+)$/.exec(text);
  if (!match || !FORGE_NAME.test(match[1]!) || !REPOSITORY_NAME.test(match[2]!))
    throw new UsageError(`"${text}" is not <forge>:<owner>/<name> (e.g. local:alice/textkit)`);
  return { forge: match[1]!, repository: match[2]! };
}

export async function pullRequestCommand(command: PullRequestCommand): Promise<number> {
  if (command.kind === 'webhook-serve') return serveWebhooks(command);
  const { temporal, queues } = cliSettings();
  const { client, connection } = await connectClient(temporal);
  try {
    switch (command.kind) {
      case 'pr-ls':
        return await listLoops(client, command.json);
      case 'pr-status': {
        const status = await client.workflow.getHandle(loopIdOf(command.id)).query(pullRequestStatusQuery);
        if (command.json) console.log(JSON.stringify(status, null, 2));
        else console.log(describe(status).join('\n'));
        return 0;
      }
      case 'pr-control': {
        const id = loopIdOf(command.id);
        const { state } = await client.workflow.getHandle(id).executeUpdate(pullRequestControlUpdate, {
          args: [{ action: command.action, ...(command.reason ? { reason: command.reason } : {}) }],
        });
        console.log(`${id}: ${state}`);
        return 0;
      }
      case 'forge-poll': {
        const repo = forgeRepositoryOf(command.repository);
        const workflowId = forgePollerId(repo);
        if (command.stop) {
          await client.workflow.getHandle(workflowId).terminate('stopped with agent forge poll --stop');
          console.log(`${workflowId}: stopped`);
          return 0;
        }
        try {
          await client.workflow.start(FORGE_POLLER_WORKFLOW_TYPE, {
            workflowId,
            taskQueue: queues.brain,
            args: [{ ...repo, intervalMs: command.everyMs }],
            workflowIdConflictPolicy: 'FAIL',
            staticSummary: `polls ${repo.forge}:${repo.repository} every ${Math.round(command.everyMs / 1000)} s`,
          });
        } catch (err) {
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
          console.log(`${workflowId} already polls ${command.repository}`);
          return 0;
        }
        console.log(`${workflowId} polls ${command.repository}: ${workflowUrl(temporal, workflowId)}`);
        return 0;
      }
    }
  } finally {
    await connection.close();
  }
}

async function listLoops(client: Client, json: boolean): Promise<number> {
  const rows: Array<{ id: string; pullRequest: string; state: string; status: string }> = [];
  const query = `${SEARCH_ATTRIBUTES.kind.name} = "pull-request"`;
  for await (const workflow of client.workflow.list({ query })) {
    const attributes = workflow.typedSearchAttributes;
    rows.push({
      id: workflow.workflowId,
      pullRequest: attributes.get(SEARCH_ATTRIBUTES.pullRequest) ?? '?',
      state: attributes.get(SEARCH_ATTRIBUTES.pullRequestState) ?? '?',
      status: workflow.status.name,
    });
  }
  if (json) console.log(JSON.stringify(rows, null, 2));
  else if (rows.length === 0) console.log('no pull request is looked after');
  else
    for (const row of rows)
      console.log(
        `${row.pullRequest}  ${row.state}  ${row.id}${row.status === 'RUNNING' ? '' : ` (${row.status.toLowerCase()})`}`,
      );
  return 0;
}

function describe(status: PullRequestLoopStatus): string[] {
  return [
    `${status.pullRequest}: ${status.state}${status.reason ? ` — ${status.reason}` : ''}`,
    ...(status.url ? [status.url] : []),
    `branch ${status.branch} · head ${status.head?.sha.slice(0, 12) ?? '?'} (checks ${status.head?.checks ?? 'not read'})`,
    `rounds ${status.rounds.length} (fix ${status.fixRoundsUsed} of ${status.maxFixRounds}) · replies waiting ${status.pendingReplies} · $${status.costUsd.toFixed(4)}`,
    ...(status.current ? [`working: ${status.current.kind} round ${status.current.taskId}`] : []),
    ...status.rounds.map(
      (r) =>
        `  round ${r.round} ${r.kind} (${r.trigger}): ${r.state}${r.commit ? ` ${r.commit.slice(0, 12)}` : ''} — ${r.reason}`,
    ),
  ];
}

async function serveWebhooks(command: Extract<PullRequestCommand, { kind: 'webhook-serve' }>): Promise<number> {
  const { temporal, queues, forges, secrets } = forgeReceiverSettings();
  if (forges.size === 0) throw new Error('AGENT_FORGES names no forge: nothing to receive webhooks from');
  const { startWebhookReceiver } = await import('../workers/webhook-receiver');
  const { client, connection } = await connectClient(temporal);
  const receiver = await startWebhookReceiver({
    client,
    taskQueue: queues.brain,
    forges,
    secrets,
    host: command.host,
    port: command.port,
  });
  console.log(
    `webhook receiver on ${receiver.url}: ${[...forges.keys()].map((name) => `${receiver.url}/webhooks/${name}`).join(', ')} → ${temporal.address} (Ctrl-C stops it)`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await receiver.close();
  await connection.close();
  return 0;
}
