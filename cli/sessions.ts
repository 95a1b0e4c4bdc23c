/** `agent session ls|show`, `agent fact set|get|ls` and `agent approve`. */
import type { Client } from '@temporalio/client';
import { decideToolCall } from '../client/approvals';
import { connectClient } from '../client/connection';
import { readSession, setFact } from '../client/session';
import { isBudgetApprovalId } from '../common/budget';
import { totalTokens } from '../common/model-types';
import { SESSION_WORKFLOW_TYPE, type SessionStatus } from '../common/session';
import type { ApproveCommand, FactCommand, SessionCommand } from './command-types';
import { formatTokens } from './follow';
import { formatAge } from './sandbox';
import { cliSettings } from './settings';

async function withClient(fn: (client: Client) => Promise<number>): Promise<number> {
  const { client, connection } = await connectClient(cliSettings().temporal);
  try {
    return await fn(client);
  } finally {
    await connection.close();
  }
}

export function sessionCommand(command: SessionCommand): Promise<number> {
  return withClient(async (client) => {
    if (command.action === 'ls') return listSessions(client, command.json);
    const status = await readSession(client, command.sessionId);
    if (command.json) console.log(JSON.stringify(status, null, 2));
    else console.log(describeSession(status));
    return 0;
  });
}

async function listSessions(client: Client, json: boolean): Promise<number> {
  const rows: Array<{ sessionId: string; status: string; started: Date; closed?: Date }> = [];
  for await (const workflow of client.workflow.list({ query: `WorkflowType = '${SESSION_WORKFLOW_TYPE}'` })) {
    rows.push({
      sessionId: workflow.workflowId.replace(/^session-/, ''),
      status: workflow.status.name.toLowerCase(),
      started: workflow.startTime,
      ...(workflow.closeTime ? { closed: workflow.closeTime } : {}),
    });
    if (rows.length >= 100) break;
  }
  if (json) {
    for (const row of rows) console.log(JSON.stringify(row));
    return 0;
  }
  if (rows.length === 0) {
    console.log('no sessions');
    return 0;
  }
  const now = Date.now();
  console.log(['SESSION'.padEnd(40), 'STATUS'.padEnd(11), 'STARTED'].join(' '));
  for (const row of rows) {
    console.log(
      [row.sessionId.padEnd(40), row.status.padEnd(11), `${formatAge(now - row.started.getTime())} ago`].join(' '),
    );
  }
  return 0;
}

/** A session as a person reads it: lanes, facts, the sandbox, the latest operations. */
export function describeSession(status: SessionStatus): string {
  const lines = [
    `session ${status.sessionId} · started ${status.startedAt} · ${status.operations.length} operations · sandbox ${status.sandbox.state}` +
      (status.sandbox.holder ? ` (used by ${status.sandbox.holder})` : ''),
  ];
  if (status.repo) lines.push(`repo: ${status.repo.kind === 'local' ? status.repo.path : status.repo.url}`);
  lines.push('', 'lanes:');
  for (const lane of status.lanes) {
    const state = lane.open ? `running ${lane.open}${lane.aborting ? ' (aborting)' : ''}` : 'idle';
    const last = lane.last && !lane.open ? ` · last ${lane.last.operationId} ${lane.last.state}` : '';
    const fork = lane.forkedFrom
      ? ` · forked from ${lane.forkedFrom.lane} (${lane.forkedFrom.toolCallId})`
      : lane.rewoundFrom
        ? ` · rewound from ${lane.rewoundFrom.operationId} turn ${lane.rewoundFrom.turn}`
        : '';
    lines.push(`  ${lane.name}: ${state}${lane.queued.length ? ` · ${lane.queued.length} queued` : ''}${last}${fork}`);
    for (const queued of lane.queued) lines.push(`    queued ${queued.operationId}: ${oneLine(queued.prompt)}`);
  }
  const facts = Object.entries(status.facts);
  if (facts.length) {
    lines.push('', 'facts:');
    for (const [key, fact] of facts) lines.push(`  ${key} = ${oneLine(fact.value)}`);
  }
  lines.push('', 'operations (latest 20):');
  for (const op of status.operations.slice(-20)) {
    const tokens = op.usage ? ` · ${formatTokens(totalTokens(op.usage))} tokens` : '';
    lines.push(
      `  ${op.operationId} [${op.lane}] ${op.state}${op.reason ? ` (${op.reason})` : ''}${op.turns !== undefined ? ` · ${op.turns} turns` : ''}${tokens}: ${oneLine(op.prompt)}`,
    );
  }
  return lines.join('\n');
}

const oneLine = (text: string, max = 80): string => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
};

export function factCommand(command: FactCommand): Promise<number> {
  return withClient(async (client) => {
    if (command.action === 'set') {
      const answer = await setFact(client, command.sessionId, command.key, command.value);
      console.log(
        `fact ${answer.key} set (#${answer.seq})${answer.previous !== undefined ? `; it was: ${oneLine(answer.previous)}` : ''}`,
      );
      return 0;
    }
    const { facts } = await readSession(client, command.sessionId);
    if (command.action === 'get') {
      const fact = facts[command.key];
      if (!fact) throw new Error(`session ${command.sessionId} has no fact ${command.key}`);
      console.log(fact.value);
      return 0;
    }
    if (command.json) console.log(JSON.stringify(facts));
    else if (Object.keys(facts).length === 0) console.log('no facts');
    else for (const [key, fact] of Object.entries(facts)) console.log(`${key} = ${fact.value}`);
    return 0;
  });
}

export function approveCommand(command: ApproveCommand): Promise<number> {
  return withClient(async (client) => {
    const approve = command.deny === undefined;
    const decided = await decideToolCall(client.workflow, {
      operationId: command.operationId,
      toolCallId: command.toolCallId,
      approve,
      ...(command.deny ? { reason: command.deny } : {}),
    });
    if (isBudgetApprovalId(decided.toolCallId)) {
      console.log(
        decided.decision === 'approved'
          ? `approved ${decided.toolCallId}: the budget is extended and the run goes on`
          : `denied ${decided.toolCallId}: the run ends on its spent budget${command.deny ? ` ("${command.deny}")` : ''}`,
      );
      return 0;
    }
    console.log(
      decided.decision === 'approved'
        ? `approved ${decided.toolCallId}: it runs now`
        : `denied ${decided.toolCallId}: the model gets the denial${command.deny ? ` ("${command.deny}")` : ''} as its result`,
    );
    return 0;
  });
}
