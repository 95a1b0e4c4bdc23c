/**
 * The worker's Prometheus endpoint (`AGENT_METRICS_ADDRESS`): the real `agent worker dev` process
 * runs an operation (two model calls, a `bash` and a `read_file`), and a scrape over HTTP shows the
 * SDK's metrics and the harness's own — tokens by class, cost, model and tool latency by tool and
 * replay policy, live sandboxes. A wrong address stops the worker's start with the variable named.
 */
import * as net from 'node:net';
import { operationResult } from '../../client/operation-result';
import { OPERATION_WORKFLOW_TYPE } from '../../common/operation';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { workerSettings } from '../../workers/settings';
import { removeSandboxes } from '../support/hands';
import { waitFor } from '../support/operation-harness';
import { connectTestTemporal, uniqueQueue, type TestTemporal } from '../support/temporal';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The value of the first sample line of `metric` whose labels include every `labels` pair. */
function sample(text: string, metric: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`) && !line.startsWith(`${metric} `)) continue;
    if (!Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`))) continue;
    return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe("the worker's metrics endpoint", () => {
  let temporal: TestTemporal;
  let model: ScriptedModelServer;
  let worker: WorkerProcess | undefined;
  const sessionId = `metrics-${process.pid}`;

  beforeAll(async () => {
    temporal = await connectTestTemporal();
    model = await startScriptedModelServer({
      script: [
        { toolCalls: [{ name: 'bash', input: { command: 'echo hello > note.txt' } }] },
        { toolCalls: [{ name: 'read_file', input: { path: 'note.txt' } }] },
        { text: 'done' },
      ],
    });
  });
  afterAll(async () => {
    await worker?.stop();
    await removeSandboxes([sessionId]);
    await model?.stop();
    await temporal?.close();
  });

  it("serves the SDK's and the harness's metrics after a run", async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const queues = { brainQueue: uniqueQueue('metrics-brain'), handsQueue: uniqueQueue('metrics-hands') };
    worker = startWorkerProcess({ ...queues, modelUrl: model.url, env: { AGENT_METRICS_ADDRESS: address } });
    const handle = await temporal.client.workflow.start(OPERATION_WORKFLOW_TYPE, {
      taskQueue: queues.brainQueue,
      workflowId: sessionId,
      args: [{ goal: 'write a note and read it', handsTaskQueue: queues.handsQueue }],
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');

    const scrape = async () => {
      const response = await fetch(`http://${address}/metrics`).catch(() => undefined);
      return response?.ok ? response.text() : undefined;
    };
    // Metrics reach the exporter as the activities record them, and the SDK's as its core reports
    // them (the workflow's completion can show after the client saw the result): wait for both.
    const text = await waitFor(async () => {
      const body = await scrape();
      const calls = body ? sample(body, 'agent_model_call_latency_ms_count', { kind: 'modelStep' }) : undefined;
      const completed = body !== undefined && /^temporal_workflow_completed(_total)?\{/m.test(body);
      return body !== undefined && calls !== undefined && calls >= 3 && completed ? body : undefined;
    }, "the model calls and the workflow's completion in the metrics");

    // The SDK's own.
    expect(text).toMatch(/^temporal_workflow_completed(_total)?\{/m);
    expect(text).toMatch(/^temporal_activity_execution_latency/m);
    // Tokens by class, with the model (the prompt is cached from the first call on), and their cost.
    expect(sample(text, 'agent_tokens_total', { class: 'cache_write', model: 'scripted-model' })).toBeGreaterThan(0);
    expect(sample(text, 'agent_tokens_total', { class: 'cache_read' })).toBeGreaterThan(0);
    expect(sample(text, 'agent_tokens_total', { class: 'output' })).toBeGreaterThan(0);
    expect(sample(text, 'agent_cost_microdollars_total', { model: 'scripted-model' })).toBeGreaterThan(0);
    // Tool latency by tool and replay policy.
    expect(
      sample(text, 'agent_tool_call_latency_ms_count', { tool: 'bash', replay_policy: 'never', outcome: 'completed' }),
    ).toBe(1);
    expect(
      sample(text, 'agent_tool_call_latency_ms_count', {
        tool: 'read_file',
        replay_policy: 'safe',
        outcome: 'completed',
      }),
    ).toBe(1);
    expect(sample(text, 'agent_model_call_latency_ms_count', { kind: 'modelStep', outcome: 'completed' })).toBe(3);
    // Counted at the start and every 10 s: a number, whatever the moment.
    expect(sample(text, 'agent_live_sandboxes')).toBeGreaterThanOrEqual(0);
  });

  it('refuses a metrics address that is not host:port, naming the variable', () => {
    expect(() => workerSettings('hands', { ...process.env, AGENT_METRICS_ADDRESS: 'nine-four-six-four' })).toThrow(
      /AGENT_METRICS_ADDRESS: "nine-four-six-four" is not host:port/,
    );
  });
});
