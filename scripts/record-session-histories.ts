/**
 * The session fixtures of `npm run fixtures:record`: a session whose lane takes a follow-up queued
 * behind a busy operation, a fact and a second lane; the follow-up operation (it continues the
 * lane's context); an operation that waited for approval; an operation whose `task` call ran a
 * subagent; and a lane under a small window (`session-context`: the session, which learns the hands
 * host from its first operation's result and grants the lease with it; `session-context-continued`:
 * its second operation, which compacts the context it took over as its first step, then runs a tool
 * on that host). Each scenario runs when one of its fixtures is wanted.
 */
import { AGENT_USER } from '../activities/hands/sandbox-spec';
import { execFileSync } from 'node:child_process';
import { decideToolCall } from '../client/approvals';
import { setFact } from '../client/session';
import { compactUpdate, statusQuery } from '../common/operation';
import { containerNameOf } from '../common/sandbox-names';
import { sessionWorkflowId } from '../common/session';
import type { OperationHarness } from '../test/support/operation-harness';

type Record = (name: string, workflowId: string) => Promise<void>;

export const SESSION_FIXTURES = [
  'session',
  'session-follow-up',
  'approval',
  'subagent',
  'session-context',
  'session-context-continued',
];

export async function recordSessionHistories(
  h: OperationHarness,
  record: Record,
  wanted: (name: string) => boolean,
): Promise<void> {
  if (['session', 'session-follow-up', 'approval', 'subagent'].some(wanted)) await recordSessions(h, record, wanted);
  if (['session-context', 'session-context-continued'].some(wanted)) await recordLaneContext(h, record, wanted);
}

async function recordSessions(h: OperationHarness, record: Record, wanted: (name: string) => boolean): Promise<void> {
  const { conversations } = await import('../test/support/conversations');
  const { startSessionHarnessOn } = await import('../test/support/session-harness');
  const { waitFor } = await import('../test/support/operation-harness');
  const s = startSessionHarnessOn(h);
  h.model.setScript(
    conversations({
      'fixture lane first': [
        { toolCalls: [{ name: 'bash', input: { command: 'while [ ! -f /workspace/go ]; do sleep 0.05; done' } }] },
        { text: 'first done' },
      ],
      'fixture lane follow-up': [{ text: 'follow-up done' }],
      'fixture other lane': [{ text: 'other lane done' }],
      'fixture approval': [
        { toolCalls: [{ id: 'toolu_fixture_ask', name: 'bash', input: { command: 'echo approved' } }] },
        { text: 'approval done' },
      ],
      'fixture parent': [
        {
          toolCalls: [
            { id: 'toolu_fixture_task', name: 'task', input: { description: 'look', prompt: 'fixture child' } },
          ],
        },
        { text: 'parent done' },
      ],
      'fixture child': [{ text: 'child answer' }],
    }),
  );
  const sessionId = 'fixture-session';
  h.removeOnClose(sessionId);
  const first = await s.submit(sessionId, 'fixture lane first');
  const op = h.temporal.client.workflow.getHandle(first.operationId);
  await waitFor(async () => (await op.query(statusQuery)).phase === 'tools', 'tools');
  const followUp = await s.submit(sessionId, 'fixture lane follow-up');
  await setFact(h.temporal.client, sessionId, 'owner', 'fixtures');
  // The tool phase can begin before the container has started.
  await waitFor(async () => {
    try {
      execFileSync('docker', ['exec', '-u', AGENT_USER, containerNameOf(sessionId), 'touch', '/workspace/go'], {
        stdio: 'ignore',
      });
      return true;
    } catch {
      return false;
    }
  }, 'the container to take the release file');
  await s.result(followUp.operationId);
  await s.result((await s.submit(sessionId, { prompt: 'fixture other lane', lane: 'other' })).operationId);
  await waitFor(async () => (await s.status(sessionId)).sandbox.state === 'removed', 'the idle sandbox to go');
  if (wanted('session')) await record('session', sessionWorkflowId(sessionId));
  if (wanted('session-follow-up')) await record('session-follow-up', followUp.operationId);

  const asked = await h.start({ goal: 'fixture approval', approvals: { bash: 'ask' } }, 'fixture-approval');
  await waitFor(async () => (await asked.query(statusQuery)).waitingApproval, 'the approval');
  await decideToolCall(h.temporal.client.workflow, {
    operationId: asked.workflowId,
    toolCallId: 'toolu_fixture_ask',
    approve: true,
  });
  await asked.result();
  if (wanted('approval')) await record('approval', asked.workflowId);

  const parent = await h.start({ goal: 'fixture parent' }, 'fixture-subagent');
  await parent.result();
  if (wanted('subagent')) await record('subagent', parent.workflowId);
  await s.close();
}

async function recordLaneContext(
  h: OperationHarness,
  record: Record,
  wanted: (name: string) => boolean,
): Promise<void> {
  const { isCompactionRequest } = await import('../test/support/context-scripts');
  const { startSessionHarnessOn } = await import('../test/support/session-harness');
  const { waitFor } = await import('../test/support/operation-harness');
  const s = startSessionHarnessOn(h);
  const print = (n: number) => ({ toolCalls: [{ name: 'bash', input: { command: `printf 'out ${n} %03000d' 0` } }] });
  const turns = [
    print(1),
    print(2),
    print(3),
    { toolCalls: [{ name: 'bash', input: { command: 'while [ ! -f /workspace/go ]; do sleep 0.05; done' } }] },
    { text: 'first done' },
    { toolCalls: [{ name: 'bash', input: { command: 'echo continued' } }] },
    { text: 'continued done' },
  ];
  let next = 0;
  h.model.setScript((request) =>
    isCompactionRequest(request) ? { text: 'Summary: printed three outputs, waited once.' } : turns[next++],
  );
  const policy = {
    windowTokens: 6_000,
    compactAtPct: 90,
    keepTurns: 1,
    editing: { atPct: 25, keepTurns: 1, minClearTokens: 700 },
  };
  const sessionId = 'fixture-session-context';
  h.removeOnClose(sessionId);
  const first = await s.submit(sessionId, { prompt: 'fixture context first', context: policy });
  const op = h.temporal.client.workflow.getHandle(first.operationId);
  await waitFor(async () => {
    const status = await op.query(statusQuery);
    return status.phase === 'tools' && status.turn === 4;
  }, 'the waiting tool call');
  await op.executeUpdate(compactUpdate, { args: [{}] });
  await waitFor(async () => {
    try {
      execFileSync('docker', ['exec', '-u', AGENT_USER, containerNameOf(sessionId), 'touch', '/workspace/go'], {
        stdio: 'ignore',
      });
      return true;
    } catch {
      return false;
    }
  }, 'the container to take the release file');
  await s.result(first.operationId);
  // A lower threshold: the continued operation compacts the context it takes over before its first request.
  const continued = await s.submit(sessionId, {
    prompt: 'fixture context continued',
    context: { ...policy, compactAtPct: 30 },
  });
  await s.result(continued.operationId);
  await waitFor(async () => (await s.status(sessionId)).sandbox.state === 'removed', 'the idle sandbox to go');
  if (wanted('session-context')) await record('session-context', sessionWorkflowId(sessionId));
  if (wanted('session-context-continued')) await record('session-context-continued', continued.operationId);
  await s.close();
}
