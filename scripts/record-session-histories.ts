/**
 * The session fixtures of `npm run fixtures:record` (group `sessions`): a session whose lane takes a
 * follow-up queued behind a busy operation, a fact and a second lane; the follow-up operation (it
 * continues the lane's context); an operation that waited for approval; and an operation whose
 * `task` call ran a subagent.
 */
import { AGENT_USER } from '../activities/hands/sandbox-manager';
import { execFileSync } from 'node:child_process';
import { decideToolCall } from '../client/approvals';
import { setFact } from '../client/session';
import { statusQuery } from '../common/operation';
import { containerNameOf } from '../common/sandbox-names';
import { sessionWorkflowId } from '../common/session';
import type { OperationHarness } from '../test/support/operation-harness';

type Record = (name: string, workflowId: string) => Promise<void>;

export async function recordSessionHistories(h: OperationHarness, record: Record): Promise<void> {
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
  await record('session', sessionWorkflowId(sessionId));
  await record('session-follow-up', followUp.operationId);

  const asked = await h.start({ goal: 'fixture approval', approvals: { bash: 'ask' } }, 'fixture-approval');
  await waitFor(async () => (await asked.query(statusQuery)).waitingApproval, 'the approval');
  await decideToolCall(h.temporal.client.workflow, {
    operationId: asked.workflowId,
    toolCallId: 'toolu_fixture_ask',
    approve: true,
  });
  await asked.result();
  await record('approval', asked.workflowId);

  const parent = await h.start({ goal: 'fixture parent' }, 'fixture-subagent');
  await parent.result();
  await record('subagent', parent.workflowId);
  await s.close();
}
