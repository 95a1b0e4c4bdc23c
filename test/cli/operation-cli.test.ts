/**
 * The commands that act on a running operation, as a person runs them (real `bin/agent` processes,
 * a real worker process, the test Temporal server, Docker and the scripted model): `agent events
 * --follow` prints the log as it is recorded and exits when the operation closes; `agent steer`
 * enters the next checkpoint; `agent abort` ends it aborted; `agent run --ask-over-budget` waits on
 * a spent budget that `agent approve <op> budget-<n>` extends or ends; `agent report <session>`
 * prints the session's ledger.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { statusQuery } from '../../common/operation';
import { containerNameOf } from '../../common/sandbox-names';
import { sessionWorkflowId } from '../../common/session';
import { PROJECT_ROOT } from '../../platform/paths';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { conversations } from '../support/conversations';
import { testPlatform } from '../support/env';
import { removeSandboxes } from '../support/hands';
import { waitFor } from '../support/operation-harness';
import { connectTestTemporal, type TestTemporal } from '../support/temporal';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

const exec = promisify(execFile);
const AGENT = path.join(PROJECT_ROOT, 'bin', 'agent');
const WAIT_FOR_RELEASE = 'while [ ! -f /workspace/release ]; do sleep 0.1; done; echo released';

/** A process whose output is read while it runs. */
interface Running {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

describe('commands on a running operation (real processes)', () => {
  const id = `cli-op-${randomUUID().slice(0, 6)}`;
  const sessionId = `${id}-s`;
  const queues = { brainQueue: `${id}-brain`, handsQueue: `${id}-hands` };
  let model: ScriptedModelServer;
  let worker: WorkerProcess;
  let temporal: TestTemporal;
  const followers: Running[] = [];
  const env = () => ({
    ...process.env,
    TEMPORAL_ADDRESS: testPlatform().temporalAddress,
    TEMPORAL_NAMESPACE: testPlatform().namespace,
    AGENT_BRAIN_QUEUE: queues.brainQueue,
    AGENT_HANDS_QUEUE: queues.handsQueue,
  });
  const agent = (...args: string[]) => exec(AGENT, args, { env: env() });
  const running = (...args: string[]): Running => {
    const child = spawn(AGENT, args, { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const process = { child, output: () => output, exited };
    followers.push(process);
    return process;
  };
  const detached = async (...args: string[]): Promise<string> => {
    const { stdout } = await agent('run', '--session', sessionId, '--detach', '--json', ...args);
    return (JSON.parse(stdout.trim()) as { operationId: string }).operationId;
  };

  beforeAll(async () => {
    model = await startScriptedModelServer({
      script: conversations({
        'cli steer and abort': [
          { text: 'Waiting for the release.', toolCalls: [{ name: 'bash', input: { command: WAIT_FOR_RELEASE } }] },
          {
            respond: (request) => ({
              text: `steered: ${request.lastUserText.includes('also say banana') ? 'banana' : 'nothing'}`,
              toolCalls: [{ name: 'bash', input: { command: 'sleep 600' } }],
            }),
          },
        ],
        'cli budget': [
          { toolCalls: [{ name: 'bash', input: { command: 'echo one' } }] },
          { toolCalls: [{ name: 'bash', input: { command: 'echo two' } }] },
          { text: 'never sent' },
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
    for (const follower of followers) if (follower.child.exitCode === null) follower.child.kill();
    await temporal.client.workflow
      .getHandle(sessionWorkflowId(sessionId))
      .terminate('test finished')
      .catch(() => undefined);
    await worker.stop();
    await model.stop();
    await temporal.close();
    await removeSandboxes([sessionId]);
  });

  it('follows the events of an operation that is steered and then aborted, all from the command line', async () => {
    const operationId = await detached('cli steer and abort');
    const follow = running('events', operationId, '--follow');
    await waitFor(async () => follow.output().includes('tool.started'), 'agent events --follow to print the tool call');
    expect(follow.output()).toMatch(/#1 \d\d:\d\d:\d\d operation\.started/);

    const steered = await agent('steer', operationId, 'also say banana');
    expect(steered.stdout.trim()).toBe(
      `steering accepted for ${operationId} (queued #1); it enters the context at the next checkpoint`,
    );
    await exec('docker', ['exec', '-u', AGENT_USER, containerNameOf(sessionId), 'touch', '/workspace/release']);
    const handle = temporal.client.workflow.getHandle(operationId);
    await waitFor(async () => {
      const status = await handle.query(statusQuery);
      return status.turn === 2 && status.phase === 'tools';
    }, 'the steered turn to run its long command');

    const aborted = await agent('abort', operationId, '--reason', 'seen enough');
    expect(aborted.stdout.trim()).toBe(`abort accepted for ${operationId}: running tools are being stopped`);
    // The follower exits by itself once the operation has closed.
    expect(await follow.exited).toBe(0);
    const log = follow.output();
    expect(log).toContain('steering.accepted');
    expect(log).toContain('also say banana');
    expect(log).toContain('steered: banana');
    expect(log).toContain('abort.accepted');
    expect(log).toContain('seen enough');
    expect(log).toMatch(/operation\.ended +\S+ \S+ .*· aborted: /);
    const order = ['operation.started', 'steering.accepted', 'abort.accepted', 'operation.ended'].map((type) =>
      log.indexOf(type),
    );
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect((await agent('status', operationId)).stdout).toContain(`${operationId}: aborted`);
  });

  it('waits on a spent budget for agent approve, and reports the session', async () => {
    const operationId = await detached('--max-turns', '1', '--ask-over-budget', 'cli budget');
    const handle = temporal.client.workflow.getHandle(operationId);
    const waiting = (toolCallId: string) =>
      waitFor(
        async () => (await handle.query(statusQuery)).waitingApproval?.toolCallId === toolCallId,
        `the budget approval ${toolCallId}`,
      );
    await waiting('budget-1');
    const status = (await agent('status', operationId)).stdout;
    expect(status).toContain(
      ' · waiting for approval: budget exceeded: 1 of 1 turns; approve to allow 1 more (budget-1)',
    );
    expect((await agent('approve', operationId, 'budget-1')).stdout.trim()).toBe(
      'approved budget-1: the budget is extended and the run goes on',
    );
    await waiting('budget-2');
    expect((await agent('approve', operationId, 'budget-2', '--deny', 'two is plenty')).stdout.trim()).toBe(
      'denied budget-2: the run ends on its spent budget ("two is plenty")',
    );
    const ended = await waitFor(async () => {
      const out = (await agent('status', operationId)).stdout;
      return out.includes('failed') ? out : undefined;
    }, 'the operation to end');
    expect(ended).toContain('budget: turns (2 used); not extended: denied by a person: two is plenty');

    const report = await agent('report', sessionId);
    expect(report.stdout.split('\n')[0]).toMatch(
      new RegExp(`^session ${sessionId} — 2 operations · [\\d,]+ tokens · \\$\\d+\\.\\d{4}$`),
    );
    expect(report.stdout).toContain(`${operationId} failed`);
    const json = JSON.parse((await agent('report', sessionId, '--json')).stdout) as {
      operations: Array<{ operationId: string; state: string }>;
      lanes: Array<{ lane: string; operations: number }>;
      consistent: boolean;
    };
    expect(json.operations.map((row) => row.state)).toEqual(['aborted', 'failed']);
    expect(json.lanes).toEqual([expect.objectContaining({ lane: 'main', operations: 2 })]);
    expect(json.consistent).toBe(true);
  });
});
