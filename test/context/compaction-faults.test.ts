/**
 * A worker killed with SIGKILL in the middle of a compaction: the operation resumes on another
 * worker, the compaction's summary call is made again, and the history holds one summary, not two.
 */
import { randomUUID } from 'node:crypto';
import { spawnWorkerChild, type WorkerChild } from '../../bench/worker-child';
import { operationResult } from '../../client/operation-result';
import { OPERATION_WORKFLOW_TYPE } from '../../common/operation';
import { removeSandboxes } from '../support/hands';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import type { ScriptedRequest, ScriptedTurn } from '../../scripted-model/script';
import { isCompactionBody, isCompactionRequest, recordedStepsOf } from '../support/context-scripts';
import { testPlatform } from '../support/env';
import { waitFor } from '../support/operation-harness';
import { connectTestTemporal, type TestTemporal } from '../support/temporal';

describe('a worker killed during a compaction', () => {
  let temporal: TestTemporal;
  let model: ScriptedModelServer;
  const children: WorkerChild[] = [];
  const id = `compaction-kill-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    temporal = await connectTestTemporal();
  });
  afterAll(async () => {
    for (const child of children) await child.kill();
    await model?.stop();
    await removeSandboxes([id]);
    await temporal.close();
  });

  it('resumes on another worker with one summary, not two', async () => {
    let turn = 0;
    let summaryCalls = 0;
    const script = (request: ScriptedRequest): ScriptedTurn => {
      if (isCompactionRequest(request)) {
        summaryCalls += 1;
        // The first summary call hangs until its worker is gone; the retry answers at once.
        return summaryCalls === 1
          ? { text: 'summary from the killed worker', latencyMs: 20_000 }
          : { text: 'summary from the new worker' };
      }
      turn += 1;
      if (turn <= 3) return { toolCalls: [{ name: 'bash', input: { command: `printf 'out ${turn} %03000d' 0` } }] };
      return { text: 'done' };
    };
    model = await startScriptedModelServer({ script });
    const { temporalAddress, namespace, workflowBundlePath, sandboxImage } = testPlatform();
    const config = {
      address: temporalAddress,
      namespace,
      brainQueue: `${id}-brain`,
      handsQueue: `${id}-hands`,
      workflowBundlePath,
      image: sandboxImage,
      modelUrl: model.url,
    };
    const log = () => undefined;
    children.push(await spawnWorkerChild(config, log));
    const handle = await temporal.client.workflow.start(OPERATION_WORKFLOW_TYPE, {
      taskQueue: config.brainQueue,
      workflowId: id,
      args: [
        {
          goal: 'compact while the worker dies',
          handsTaskQueue: config.handsQueue,
          heartbeatTimeoutMs: 2_000,
          context: { windowTokens: 6_000, keepTurns: 1, editing: { enabled: false } },
        },
      ],
    });
    await waitFor(async () => model.requests.some((r) => isCompactionBody(r.body)), 'the first summary call', 120_000);
    await children[0]!.kill();
    children.push(await spawnWorkerChild(config, log));

    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(summaryCalls).toBe(2);
    const compactions = (await recordedStepsOf(handle)).filter((s) => s.kind === 'compaction');
    expect(compactions).toHaveLength(1);
    expect(compactions[0]!.result?.summary).toBe('summary from the new worker');
    const last = model.requests.filter((r) => r.status === 200).at(-1)!;
    expect(last.rawBody).toContain('summary from the new worker');
    expect(last.rawBody).not.toContain('summary from the killed worker');
    expect(result.tokens.compactions).toBe(1);
  });
});
