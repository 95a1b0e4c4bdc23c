/**
 * Global facts on the real Temporal server, Docker and the scripted model: last write wins; a fact
 * written while an operation runs joins its context at the tail at the next checkpoint (the prefix
 * never changes); an idle lane gets the facts it has not seen with its next operation, a new lane all
 * of them; bad keys and values are refused by name.
 */
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { execFileSync } from 'node:child_process';
import { setFact } from '../../client/session';
import { statusQuery } from '../../common/operation';
import { containerNameOf } from '../../common/sandbox-names';
import { assertRequestsExtendPrefix } from '../../scripted-model/prefix';
import type { RecordedRequest } from '../../scripted-model/server';
import { conversations, type RequestBody } from '../support/conversations';
import { waitFor } from '../support/operation-harness';
import { startSessionHarness, type SessionHarness } from '../support/session-harness';

const answered = (requests: RecordedRequest[]) => requests.filter((r) => r.status === 200);
const lastMessage = (r: RecordedRequest) => (r.body as RequestBody).messages.at(-1)!;

describe('global facts', () => {
  let s: SessionHarness;
  beforeAll(async () => {
    s = await startSessionHarness();
  });
  afterAll(async () => {
    await s.close();
  });

  it('enters a running lane at the next checkpoint, idle lanes with their next operation, new lanes in full', async () => {
    s.h.model.setScript(
      conversations({
        'facts first': [
          { toolCalls: [{ name: 'bash', input: { command: 'while [ ! -f /workspace/go ]; do sleep 0.05; done' } }] },
          { text: 'first done' },
        ],
        'facts second': [{ text: 'second done' }],
        'facts other lane': [{ text: 'other done' }],
      }),
    );
    const sessionId = s.newSession();
    const client = s.h.temporal.client;
    const first = s.h.model.requests.length;
    const op = await s.submit(sessionId, 'facts first');
    await waitFor(
      async () => (await s.operation(op.operationId).query(statusQuery)).phase === 'tools',
      'the tool call',
    );
    expect(await setFact(client, sessionId, 'deploy-target', 'staging')).toEqual({ key: 'deploy-target', seq: 1 });
    expect(await setFact(client, sessionId, 'deploy-target', 'production')).toEqual({
      key: 'deploy-target',
      seq: 2,
      previous: 'staging',
    });
    await waitFor(async () => {
      try {
        execFileSync('docker', ['exec', '-u', AGENT_USER, containerNameOf(sessionId), 'touch', '/workspace/go']);
        return true;
      } catch {
        return false;
      }
    }, 'release');
    expect((await s.result(op.operationId)).finalText).toBe('first done');
    // The running lane's next request got the latest value at its tail, after the tool result.
    const [, second] = answered(s.h.model.requests.slice(first));
    const tail = lastMessage(second).content;
    expect(tail.map((b) => b.type)).toEqual(['tool_result', 'text']);
    expect(tail[1].text).toBe('[session fact] deploy-target = production');

    // Written while the lane is idle: its next operation gets it before the prompt.
    await setFact(client, sessionId, 'owner', 'ada');
    const next = await s.submit(sessionId, 'facts second');
    await s.result(next.operationId);
    const third = answered(s.h.model.requests.slice(first))[2];
    expect(lastMessage(third).content.map((b) => b.text)).toEqual(['[session fact] owner = ada', 'facts second']);
    assertRequestsExtendPrefix(answered(s.h.model.requests.slice(first)).slice(0, 3));

    // A new lane starts with every fact.
    const other = await s.submit(sessionId, { prompt: 'facts other lane', lane: 'other' });
    await s.result(other.operationId);
    const fourth = answered(s.h.model.requests.slice(first))[3];
    expect(lastMessage(fourth).content.map((b) => b.text)).toEqual([
      '[session fact] deploy-target = production',
      '[session fact] owner = ada',
      'facts other lane',
    ]);
    expect((await s.status(sessionId)).facts).toMatchObject({
      'deploy-target': { value: 'production', seq: 2 },
      owner: { value: 'ada', seq: 3 },
    });
  });

  it('refuses empty and too long keys and values by name', async () => {
    s.h.model.setScript(conversations({ 'facts validation': [{ text: 'ok' }] }));
    const sessionId = s.newSession();
    await s.result((await s.submit(sessionId, 'facts validation')).operationId);
    const client = s.h.temporal.client;
    await expect(setFact(client, sessionId, '', 'x')).rejects.toMatchObject({
      type: 'InvalidFact',
      message: 'invalid fact: key: must be a non-empty string',
    });
    await expect(setFact(client, sessionId, 'k'.repeat(129), 'x')).rejects.toMatchObject({
      message: 'invalid fact: key: too long (129 characters, at most 128)',
    });
    await expect(setFact(client, sessionId, 'bad key', 'x')).rejects.toMatchObject({ type: 'InvalidFact' });
    await expect(setFact(client, sessionId, 'k', 'v'.repeat(16_385))).rejects.toMatchObject({
      message: expect.stringContaining('value: too long'),
    });
    await expect(setFact(client, 'no-such-session-x', 'k', 'v')).rejects.toMatchObject({ type: 'UnknownSession' });
    expect((await s.status(sessionId)).facts).toEqual({});
  });
});
