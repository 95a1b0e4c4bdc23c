/**
 * The records that decide a retried tool call's replay are out of the agent's reach. A `never` call
 * that erases everything the agent can (`git clean -fdx && rm -rf /workspace/.agent`) and then sleeps
 * is interrupted by a SIGKILL of the real worker process during the sleep; a new worker takes the
 * operation over, and the command has run exactly once.
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { operationResult } from '../../client/operation-result';
import { OPERATION_WORKFLOW_TYPE } from '../../common/operation';
import { containerNameOf } from '../../common/sandbox-names';
import { PROJECT_ROOT } from '../../platform/paths';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import type { ScriptedRequest, ScriptedTurn } from '../../scripted-model/script';
import { removeSandboxes } from '../support/hands';
import { waitFor } from '../support/operation-harness';
import { connectTestTemporal, uniqueQueue, type TestTemporal } from '../support/temporal';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

const ERASE_AND_SLEEP = 'echo ran >> /home/agent/runs.log && git clean -fdx && rm -rf /workspace/.agent && sleep 3';

/** Turns chosen by the number of assistant messages, so a retried request gets the same answer. */
function script(request: ScriptedRequest): ScriptedTurn | undefined {
  const turn = request.body.messages.filter((m) => m.role === 'assistant').length;
  if (turn === 0) return { toolCalls: [{ id: 'toolu_erase_01', name: 'bash', input: { command: ERASE_AND_SLEEP } }] };
  if (turn === 1)
    return { toolCalls: [{ id: 'toolu_erase_02', name: 'bash', input: { command: 'cat /home/agent/runs.log' } }] };
  if (turn === 2) return { text: request.toolResults[0]?.content ?? '' };
  return undefined;
}

const inSandbox = (sessionId: string, command: string): string => {
  try {
    return execFileSync('docker', ['exec', containerNameOf(sessionId), 'bash', '-c', command], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return '';
  }
};

describe('the tool-call journal is out of the agent’s reach', () => {
  let temporal: TestTemporal;
  let model: ScriptedModelServer;
  const workers: WorkerProcess[] = [];
  const sessionId = `erase-journal-${process.pid}`;

  beforeAll(async () => {
    temporal = await connectTestTemporal();
    model = await startScriptedModelServer({ script });
  });
  afterAll(async () => {
    for (const worker of workers) await worker.stop();
    await removeSandboxes([sessionId]);
    await model?.stop();
    await temporal?.close();
  });

  it('runs a never call that erases the workspace records exactly once when its worker is SIGKILLed mid-call', async () => {
    const queues = { brainQueue: uniqueQueue('erase-brain'), handsQueue: uniqueQueue('erase-hands') };
    workers.push(startWorkerProcess({ ...queues, modelUrl: model.url }));
    const handle = await temporal.client.workflow.start(OPERATION_WORKFLOW_TYPE, {
      taskQueue: queues.brainQueue,
      workflowId: sessionId,
      args: [
        {
          goal: 'clean everything, then wait',
          repo: { kind: 'local', path: path.join(PROJECT_ROOT, 'examples', 'calculator') },
          handsTaskQueue: queues.handsQueue,
          heartbeatTimeoutMs: 3_000,
        },
      ],
    });

    // The command has erased what the agent can reach and sleeps: the worker dies now.
    await waitFor(
      async () =>
        inSandbox(
          sessionId,
          'cat /home/agent/runs.log; test -e /workspace/.agent || echo erased; pgrep -x sleep',
        ).match(/^ran\nerased\n\d+/) !== null,
      'the command to erase the workspace records and sleep',
      120_000,
    );
    await workers[0].kill();
    workers.push(startWorkerProcess({ ...queues, modelUrl: model.url }));

    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    // `cat /home/agent/runs.log` after the crash: one line, the command ran exactly once.
    expect(result.finalText).toBe('ran\n[exit code 0]');
    // The retried attempt returned the command's real result (it finished while no worker watched).
    const second = model.requests.find((r) => r.status === 200 && r.turnIndex === 1)!;
    const firstResult = JSON.stringify((second.body as { messages: Array<{ content: unknown }> }).messages.at(-1));
    expect(firstResult).not.toContain('[interrupted:');
    expect(firstResult).toContain('[exit code 0]');
  });
});
