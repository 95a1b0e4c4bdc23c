/**
 * Sessions and lanes on the real Temporal server, Docker and the scripted Messages API: durable
 * acceptance through Update-with-Start, follow-ups queued behind a busy lane, a lane's next operation
 * continuing its conversation as an exact prefix (from the cache and rebuilt from history), fresh
 * contexts, two lanes at once under the sandbox lease, racing prompts, aborts, and refused input.
 */
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { Refused } from '../../client/session';
import { operationAbortingSignal } from '../../common/lanes';
import { abortUpdate, statusQuery } from '../../common/operation';
import { containerNameOf } from '../../common/sandbox-names';
import { sessionWorkflowId } from '../../common/session';
import { assertRequestsExtendPrefix } from '../../scripted-model/prefix';
import type { RecordedRequest } from '../../scripted-model/server';
import { conversations, type RequestBody } from '../support/conversations';
import { testPlatform } from '../support/env';
import { sendUntilAdmitted } from '../../client/update-admission';
import { waitFor } from '../support/operation-harness';
import { startSessionHarness, type SessionHarness } from '../support/session-harness';

const answered = (requests: RecordedRequest[]) => requests.filter((r) => r.status === 200 && r.path === '/v1/messages');
const bodyOf = (r: RecordedRequest) => r.body as RequestBody & { system: unknown };
const tryExec = (container: string, script: string): string | undefined => {
  try {
    return execFileSync('docker', ['exec', '-u', AGENT_USER, container, 'bash', '-c', script], { encoding: 'utf8' });
  } catch {
    return undefined;
  }
};
const waitForRelease = (file: string) =>
  `while [ ! -f /workspace/${file} ]; do sleep 0.05; done; echo released ${file}`;

describe('sessions and lanes', () => {
  let s: SessionHarness;
  beforeAll(async () => {
    s = await startSessionHarness();
  });
  afterAll(async () => {
    await s.close();
  });

  it('queues a follow-up behind a busy lane and continues the conversation as an exact prefix', async () => {
    s.h.model.setScript(
      conversations({
        'first prompt alpha': [
          { text: 'Waiting for the release.', toolCalls: [{ name: 'bash', input: { command: waitForRelease('go') } }] },
          { text: 'alpha done' },
        ],
        'second prompt beta': [{ text: 'beta done' }],
      }),
    );
    const sessionId = s.newSession();
    const first = s.h.model.requests.length;
    const a = await s.submit(sessionId, 'first prompt alpha');
    expect(a).toMatchObject({ sessionId, lane: 'main', state: 'started' });
    await waitFor(async () => (await s.operation(a.operationId).query(statusQuery)).phase === 'tools', 'the tool call');
    const b = await s.submit(sessionId, 'second prompt beta');
    expect(b).toMatchObject({ lane: 'main', state: 'queued', position: 1 });
    const busy = await s.status(sessionId);
    expect(busy.lanes.find((l) => l.name === 'main')).toMatchObject({
      open: a.operationId,
      queued: [{ operationId: b.operationId, prompt: 'second prompt beta' }],
    });
    // The follow-up has not started: no workflow with its id yet.
    await expect(s.operation(b.operationId).describe()).rejects.toThrow();
    await waitFor(async () => tryExec(containerNameOf(sessionId), 'touch /workspace/go') !== undefined, 'release');

    const ra = await s.result(a.operationId);
    const rb = await s.result(b.operationId);
    expect(ra).toMatchObject({ state: 'completed', finalText: 'alpha done', lane: 'main' });
    expect(rb).toMatchObject({ state: 'completed', finalText: 'beta done', lane: 'main' });
    s.h.model.assertScriptFinished();

    const requests = answered(s.h.model.requests.slice(first));
    expect(requests).toHaveLength(3);
    assertRequestsExtendPrefix(requests);
    const last = bodyOf(requests[1]);
    const next = bodyOf(requests[2]);
    expect(next.system).toEqual(last.system);
    expect(next.messages).toHaveLength(last.messages.length + 2);
    expect(next.messages.at(-2)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'alpha done' }] });
    expect(next.messages.at(-1)!.content.map((b) => b.text)).toEqual(['second prompt beta']);

    // The session learns of the follow-up's end after its result is out: wait for it to hand the
    // lane's context on.
    const main = async () => (await s.status(sessionId)).lanes.find((l) => l.name === 'main');
    await waitFor(async () => (await main())?.contextFrom === b.operationId, 'the lane to record the follow-up');
    const done = await s.status(sessionId);
    expect(done.lanes.find((l) => l.name === 'main')).toMatchObject({
      operations: 2,
      contextFrom: b.operationId,
      queued: [],
    });
    expect(done.operations.map((o) => [o.operationId, o.state])).toEqual([
      [a.operationId, 'completed'],
      [b.operationId, 'completed'],
    ]);
  });

  it("rebuilds the lane's context from history on a cold worker into the same bytes", async () => {
    const script = () =>
      conversations({
        'cold one': [{ text: 'reply one' }],
        'cold two': [{ text: 'reply two' }],
        'cold three': [{ text: 'reply three' }],
      });
    const run = async (dropCache: boolean): Promise<string[]> => {
      s.h.model.setScript(script());
      const sessionId = s.newSession('cold');
      const first = s.h.model.requests.length;
      for (const prompt of ['cold one', 'cold two', 'cold three']) {
        // `queued` when the session has not yet seen the previous operation end: it starts right after.
        const accepted = await s.submit(sessionId, prompt);
        expect((await s.result(accepted.operationId)).state).toBe('completed');
        if (dropCache) s.h.cache.clear();
      }
      return answered(s.h.model.requests.slice(first)).map((r) => JSON.stringify(r.body));
    };
    const warm = await run(false);
    const rebuildsBefore = s.h.cache.stats.rebuilds;
    const cold = await run(true);
    expect(s.h.cache.stats.rebuilds).toBe(rebuildsBefore + 2);
    expect(cold).toEqual(warm);
    expect(JSON.parse(cold[2]).messages).toHaveLength(5);
  });

  it('starts a fresh context in a lane when asked, and keeps other lanes apart', async () => {
    s.h.model.setScript(
      conversations({
        'fresh first': [{ text: 'first answer' }],
        'fresh second': [{ text: 'second answer' }],
        'other lane': [{ text: 'other answer' }],
      }),
    );
    const sessionId = s.newSession();
    const first = s.h.model.requests.length;
    await s.result((await s.submit(sessionId, 'fresh first')).operationId);
    await s.result((await s.submit(sessionId, { prompt: 'fresh second', newContext: true })).operationId);
    await s.result((await s.submit(sessionId, { prompt: 'other lane', lane: 'docs' })).operationId);
    const [one, two, three] = answered(s.h.model.requests.slice(first)).map(bodyOf);
    expect(one.messages).toHaveLength(1);
    expect(two.messages).toHaveLength(1);
    expect(two.messages[0].content.map((b) => b.text)).toEqual(['fresh second']);
    expect(three.messages).toHaveLength(1);
    const status = await s.status(sessionId);
    expect(status.lanes.map((l) => l.name).sort()).toEqual(['docs', 'main']);
  });

  it('runs two lanes at once to completion, one tool call at a time in the shared workspace', async () => {
    s.h.model.setScript(
      conversations({
        'lane A task': [
          {
            toolCalls: [
              {
                name: 'bash',
                input: {
                  command: `echo A-start >> /workspace/order.log; ${waitForRelease('release-a')}; echo A-end >> /workspace/order.log`,
                },
              },
            ],
          },
          { text: 'A done' },
        ],
        'lane B task': [
          { toolCalls: [{ name: 'bash', input: { command: 'echo B >> /workspace/order.log' } }] },
          { text: 'B done' },
        ],
      }),
    );
    const sessionId = s.newSession();
    const a = await s.submit(sessionId, { prompt: 'lane A task', lane: 'a' });
    await waitFor(
      async () => tryExec(containerNameOf(sessionId), 'cat /workspace/order.log')?.includes('A-start'),
      'A to run',
    );
    const b = await s.submit(sessionId, { prompt: 'lane B task', lane: 'b' });
    expect(b.state).toBe('started');
    // Both lanes are open at once; B's tool call waits for the sandbox while A's runs.
    const both = await waitFor(async () => {
      const status = await s.status(sessionId);
      return status.sandbox.waiting.includes(b.operationId) ? status : undefined;
    }, 'B to wait for the sandbox');
    expect(both.sandbox.holder).toBe(a.operationId);
    expect(
      both.lanes
        .filter((l) => l.open)
        .map((l) => l.name)
        .sort(),
    ).toEqual(['a', 'b']);
    tryExec(containerNameOf(sessionId), 'touch /workspace/release-a');
    expect(await s.result(a.operationId)).toMatchObject({ state: 'completed', finalText: 'A done' });
    expect(await s.result(b.operationId)).toMatchObject({ state: 'completed', finalText: 'B done' });
    expect(tryExec(containerNameOf(sessionId), 'cat /workspace/order.log')?.trim().split('\n')).toEqual([
      'A-start',
      'A-end',
      'B',
    ]);
    // Idle again: the session removed the container (the volume stays).
    await waitFor(async () => (await s.status(sessionId)).sandbox.state === 'removed', 'the container to be removed');
    await expect(s.h.docker.getContainer(containerNameOf(sessionId)).inspect()).rejects.toThrow();
  });

  it('starts exactly one of two prompts racing for an idle lane and queues the other', async () => {
    s.h.model.setScript(conversations({ 'racer one': [{ text: 'one' }], 'racer two': [{ text: 'two' }] }));
    const sessionId = s.newSession();
    await s.submit(sessionId, { prompt: 'racer one', lane: 'warmup' }).then((r) => s.result(r.operationId));
    const [x, y] = await Promise.all([s.submit(sessionId, 'racer one'), s.submit(sessionId, 'racer two')]);
    expect([x.state, y.state].sort()).toEqual(['queued', 'started']);
    expect((await s.result(x.operationId)).state).toBe('completed');
    expect((await s.result(y.operationId)).state).toBe('completed');
  });

  it('cancels queued follow-ups when the lane is aborted, and refuses new ones until it has ended', async () => {
    s.h.model.setScript(
      conversations({
        'abort me': [{ toolCalls: [{ name: 'bash', input: { command: 'sleep 600' } }] }],
        'after abort': [{ text: 'continued after the abort' }],
      }),
    );
    const sessionId = s.newSession();
    const a = await s.submit(sessionId, 'abort me');
    await waitFor(async () => (await s.operation(a.operationId).query(statusQuery)).phase === 'tools', 'the tool call');
    const queued = await s.submit(sessionId, 'queued then cancelled');
    expect(queued.state).toBe('queued');
    // What the operation tells its session once an abort is accepted: the lane refuses follow-ups.
    await s.h.temporal.client.workflow
      .getHandle(sessionWorkflowId(sessionId))
      .signal(operationAbortingSignal, { operationId: a.operationId, reason: 'test' });
    await waitFor(async () => (await s.status(sessionId)).lanes[0].aborting === true, 'the lane to be aborting');
    const refused = await s.submit(sessionId, 'too early').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Refused);
    expect(refused).toMatchObject({ type: 'LaneAborting' });
    expect((refused as Error).message).toContain(`lane main is being aborted (operation ${a.operationId})`);

    await sendUntilAdmitted((updateId) =>
      s.operation(a.operationId).executeUpdate(abortUpdate, { args: [{ reason: 'test abort' }], updateId }),
    );
    expect((await s.result(a.operationId)).state).toBe('aborted');
    const status = await waitFor(async () => {
      const st = await s.status(sessionId);
      return st.lanes[0].open === undefined && !st.lanes[0].aborting ? st : undefined;
    }, 'the lane to be idle');
    expect(status.operations.find((o) => o.operationId === queued.operationId)).toMatchObject({ state: 'cancelled' });
    // After the abort the lane takes prompts again, continuing its context (the cut-off call answered).
    const first = s.h.model.requests.length;
    const after = await s.submit(sessionId, 'after abort');
    expect(await s.result(after.operationId)).toMatchObject({
      state: 'completed',
      finalText: 'continued after the abort',
    });
    const tail = bodyOf(answered(s.h.model.requests.slice(first))[0]).messages.at(-1)!;
    expect(tail.content.map((b) => b.type)).toEqual(['tool_result', 'text']);
    expect(tail.content[0].is_error).toBe(true);
  });

  it('takes prompts from the temporal CLI (Update-with-Start), and still runs an operation started alone', async () => {
    s.h.model.setScript(
      conversations({
        'from the temporal cli': [{ text: 'cli session answer' }],
        'a lone operation': [
          { toolCalls: [{ name: 'bash', input: { command: 'echo alone' } }] },
          { text: 'alone done' },
        ],
      }),
    );
    const sessionId = s.newSession('tcli');
    const { temporalCli, temporalAddress, namespace } = testPlatform();
    // Asynchronous: the workers answering the CLI run in this process.
    const cli = (...args: string[]) =>
      promisify(execFile)(temporalCli, [...args, '--address', temporalAddress, '--namespace', namespace, '-o', 'json']);
    await cli(
      'workflow',
      'execute-update-with-start',
      '--workflow-id',
      sessionWorkflowId(sessionId),
      '--type',
      'session',
      '--task-queue',
      s.h.brainQueue,
      '--id-conflict-policy',
      'UseExisting',
      '--input',
      JSON.stringify({ handsTaskQueue: s.h.handsQueue }),
      '--update-name',
      'prompt',
      '--update-input',
      JSON.stringify({ prompt: 'from the temporal cli', lane: 'main' }),
    );
    const [entry] = (await s.status(sessionId)).operations;
    expect(entry).toMatchObject({ operationId: `op-${sessionId}.1`, lane: 'main' });
    expect(await s.result(entry.operationId)).toMatchObject({ state: 'completed', finalText: 'cli session answer' });

    // A session of one operation: started alone, it owns its sandbox and removes the container at the end.
    const alone = `alone-${sessionId}`;
    s.h.removeOnClose(alone);
    await cli(
      'workflow',
      'start',
      '--type',
      'operation',
      '--task-queue',
      s.h.brainQueue,
      '--workflow-id',
      alone,
      '--input',
      JSON.stringify({ goal: 'a lone operation', handsTaskQueue: s.h.handsQueue }),
    );
    expect(await s.result(alone)).toMatchObject({ state: 'completed', finalText: 'alone done', sessionId: alone });
    await expect(s.h.docker.getContainer(containerNameOf(alone)).inspect()).rejects.toThrow();
  });

  it('refuses bad prompts with a message naming the field, leaving nothing behind', async () => {
    s.h.model.setScript(conversations({ 'valid prompt': [{ text: 'ok' }] }));
    const sessionId = s.newSession();
    await s.result((await s.submit(sessionId, 'valid prompt')).operationId);
    const refusal = async (prompt: unknown) =>
      (await s.submit(sessionId, prompt as never).catch((err: unknown) => err)) as Refused;
    expect(await refusal({ prompt: '  ' })).toMatchObject({
      type: 'InvalidPrompt',
      message: expect.stringContaining('prompt: must be a non-empty string'),
    });
    expect(await refusal({ prompt: 'x', lane: 'bad lane!' })).toMatchObject({
      message: expect.stringContaining('lane: must be'),
    });
    expect(await refusal({ prompt: 'x', lane: 'subagent:x' })).toMatchObject({
      message: expect.stringContaining('lane: must not start with "subagent:"'),
    });
    expect(await refusal({ prompt: 'x', colour: 'red' })).toMatchObject({
      message: expect.stringContaining('colour: unknown field'),
    });
    expect(await refusal({ prompt: 'x', budget: { maxTurns: 0 } })).toMatchObject({
      message: expect.stringContaining('budget.maxTurns'),
    });
    expect(await refusal({ prompt: 'x', approvals: { 'rm_rf:/x/': 'ask' } })).toMatchObject({
      message: expect.stringContaining('unknown tool "rm_rf"'),
    });
    expect(await refusal({ prompt: 'x', system: 'new system' })).toMatchObject({
      message: expect.stringContaining('system: lane main continues'),
    });
    const taken = (await s.status(sessionId)).operations[0].operationId;
    expect(await refusal({ prompt: 'x', operationId: taken })).toMatchObject({ type: 'DuplicateOperationId' });
    expect(await refusal({ prompt: 'x', repo: { kind: 'local', path: '/elsewhere' } })).toMatchObject({
      type: 'RepoMismatch',
    });
    expect((await s.status(sessionId)).operations).toHaveLength(1);
  });
});
