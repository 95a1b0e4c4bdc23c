/**
 * The session commands as a person runs them (real `bin/agent` processes, a real worker process, the
 * test Temporal server, Docker and the scripted model): `agent run --session … --json`, a second
 * prompt continuing the lane, `agent fact`, `agent session show|ls`, `agent approve` (and its
 * refusals), `agent events`.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { statusQuery } from '../../common/operation';
import { removeSandboxes } from '../support/hands';
import { sessionWorkflowId } from '../../common/session';
import { PROJECT_ROOT } from '../../platform/paths';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { conversations } from '../support/conversations';
import { testPlatform } from '../support/env';
import { waitFor } from '../support/operation-harness';
import { connectTestTemporal, type TestTemporal } from '../support/temporal';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

const exec = promisify(execFile);
const AGENT = path.join(PROJECT_ROOT, 'bin', 'agent');

describe('session commands (real processes)', () => {
  const id = `cli-sess-${randomUUID().slice(0, 6)}`;
  const sessionId = `${id}-s`;
  const queues = { brainQueue: `${id}-brain`, handsQueue: `${id}-hands` };
  let model: ScriptedModelServer;
  let worker: WorkerProcess;
  let temporal: TestTemporal;
  const env = () => ({
    ...process.env,
    TEMPORAL_ADDRESS: testPlatform().temporalAddress,
    TEMPORAL_NAMESPACE: testPlatform().namespace,
    AGENT_BRAIN_QUEUE: queues.brainQueue,
    AGENT_HANDS_QUEUE: queues.handsQueue,
  });
  const agent = (...args: string[]) => exec(AGENT, args, { env: env() });
  const failing = (...args: string[]) =>
    agent(...args).then(
      () => {
        throw new Error(`agent ${args.join(' ')} succeeded`);
      },
      (err: { stderr: string; code: number }) => err,
    );

  beforeAll(async () => {
    model = await startScriptedModelServer({
      script: conversations({
        'cli first': [
          { text: 'Looking.', toolCalls: [{ name: 'bash', input: { command: 'echo hi' } }] },
          { text: 'first answer' },
        ],
        'cli second': [{ text: 'second answer' }],
        'cli approve': [
          { toolCalls: [{ id: 'toolu_cli_ask', name: 'bash', input: { command: 'echo pushing' } }] },
          { respond: (request) => ({ text: `saw: ${request.toolResults[0]?.content}` }) },
        ],
      }),
    });
    worker = startWorkerProcess({ ...queues, modelUrl: model.url });
    temporal = await connectTestTemporal();
    await waitFor(
      async () => {
        const queue = await temporal.client.workflowService.describeTaskQueue({
          namespace: testPlatform().namespace,
          taskQueue: { name: queues.brainQueue },
        });
        return (queue.pollers ?? []).length > 0;
      },
      'the worker to poll',
      120_000,
    );
  });
  afterAll(async () => {
    await temporal.client.workflow
      .getHandle(sessionWorkflowId(sessionId))
      .terminate('test finished')
      .catch(() => undefined);
    await worker.stop();
    await model.stop();
    await temporal.close();
    await removeSandboxes([sessionId]);
  });

  it('runs prompts in a session: --json prints one line, the next prompt continues the lane', async () => {
    const first = await agent('run', '--session', sessionId, '--json', 'cli first');
    const lines = first.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0]);
    expect(Object.keys(summary)).toEqual(['operationId', 'sessionId', 'lane', 'state', 'turns', 'usage']);
    expect(summary).toMatchObject({ sessionId, lane: 'main', state: 'completed', turns: 2 });
    expect(summary.usage.output).toBeGreaterThan(0);
    // Progress and the live events went to stderr.
    expect(first.stderr).toContain(`operation ${summary.operationId} accepted (session ${sessionId}, lane main)`);
    expect(first.stderr).toContain('→ bash: echo hi');
    expect(first.stderr).toContain('first answer');

    const second = await agent('run', '--session', sessionId, 'cli second');
    expect(second.stdout).toContain(`operation op-${sessionId}.2 accepted`);
    expect(second.stdout).toContain('COMPLETED: end_turn');
    expect(second.stdout).toContain('second answer');
    // The lane's conversation continued: the second request carried the first one's messages.
    const bodies = model.requests.filter((r) => r.status === 200).map((r) => r.body as { messages: unknown[] });
    expect(bodies.at(-1)!.messages).toHaveLength(bodies.at(-2)!.messages.length + 2);
  });

  it('sets, gets and lists facts, and shows and lists the session', async () => {
    expect((await agent('fact', 'set', sessionId, 'owner', 'ada lovelace')).stdout.trim()).toBe('fact owner set (#1)');
    expect((await agent('fact', 'get', sessionId, 'owner')).stdout).toBe('ada lovelace\n');
    expect((await agent('fact', 'ls', sessionId)).stdout).toBe('owner = ada lovelace\n');
    const empty = await failing('fact', 'set', sessionId, '', 'x');
    expect(empty.code).toBe(1);
    expect(empty.stderr.trim()).toBe('error: invalid fact: key: must be a non-empty string');
    const missing = await failing('fact', 'get', sessionId, 'nope');
    expect(missing.stderr.trim()).toBe(`error: session ${sessionId} has no fact nope`);

    const show = (await agent('session', 'show', sessionId)).stdout;
    expect(show).toContain(`session ${sessionId}`);
    expect(show).toContain('  main: idle');
    expect(show).toContain('owner = ada lovelace');
    expect(show).toContain(`op-${sessionId}.2 [main] completed (end_turn)`);
    expect((await agent('session', 'ls')).stdout).toContain(sessionId);
    const unknown = await failing('session', 'show', 'no-such-session-zz');
    expect(unknown.stderr.trim()).toBe('error: no session no-such-session-zz');
  });

  it('decides a waiting call with agent approve, and refuses bad decisions in one line', async () => {
    const detached = await agent(
      'run',
      '--session',
      sessionId,
      '--detach',
      '--json',
      '--approvals',
      '{"bash": "ask"}',
      'cli approve',
    );
    const { operationId, state } = JSON.parse(detached.stdout.trim());
    expect(state).toBe('running');
    const handle = temporal.client.workflow.getHandle(operationId);
    await waitFor(async () => (await handle.query(statusQuery)).waitingApproval, 'the approval');
    const waiting = (await agent('status', operationId)).stdout;
    expect(waiting).toContain(`${operationId}: waiting-approval — turn 1`);
    expect(waiting).toMatch(/ · waiting for approval: .+ \(toolu_cli_ask\)/);
    const unknown = await failing('approve', operationId, 'toolu_nope');
    expect(unknown.stderr.trim()).toMatch(
      /^error: this operation has no tool call toolu_nope \(waiting now: toolu_cli_ask/,
    );
    const denied = await agent('approve', operationId, 'toolu_cli_ask', '--deny', 'not from the CLI test');
    expect(denied.stdout.trim()).toBe(
      'denied toolu_cli_ask: the model gets the denial ("not from the CLI test") as its result',
    );
    const again = await failing('approve', operationId, 'toolu_cli_ask');
    expect(again.stderr.trim()).toMatch(/already denied|has already ended/);

    const status = await waitFor(async () => {
      const out = (await agent('status', operationId)).stdout;
      return out.includes('completed') ? out : undefined;
    }, 'the operation to end');
    expect(status).toContain('saw: denied by a person: not from the CLI test');

    const events = (await agent('events', sessionId)).stdout;
    expect(events).toMatch(/^#1 \d\d:\d\d:\d\d prompt\.accepted/);
    expect(events).toContain('approval.requested');
    expect(events).toContain('toolu_cli_ask denied by person: not from the CLI test');
    expect(events).toContain('fact.set');
    const noLane = await failing('events', sessionId, '--lane', 'nope');
    expect(noLane.stderr.trim()).toBe(`error: --lane: ${sessionId} has no lane nope (lanes: main)`);
    const noType = await failing('events', sessionId, '--type', 'tools.started');
    expect(noType.stderr.trim()).toMatch(
      /^error: --type: unknown event type "tools.started" \(types: prompt.accepted, /,
    );
  });
});
