/**
 * Traces (`common/trace.ts`, `activities/tracing/`): ids derived from the history, the OTLP settings
 * a worker refuses with the variable named, the exporter's OTLP/HTTP JSON and its keeping of spans
 * while the endpoint is down, and — on the real Temporal server, Docker and the scripted model — a
 * session operation with a subagent as spans: the operation's trace, the subagent's span under the
 * operation's, a span per model step and tool call with tokens, tool name, replay policy, attempt
 * and outcome; a malformed trace header on a start changes nothing but the trace. (The real
 * collector, and a worker SIGKILL, are in test/cluster/traces.test.ts.)
 */
import * as http from 'node:http';
import { Client } from '@temporalio/client';
import type { AddressInfo } from 'node:net';
import { operationResult } from '../../client/operation-result';
import { subagentOperationIdOf } from '../../common/lanes';
import { totalTokens } from '../../common/model-types';
import { OPERATION_WORKFLOW_TYPE } from '../../common/operation';
import {
  attemptSpanIdOf,
  decodeTraceParent,
  encodeTraceParent,
  rootSpanIdOf,
  TRACE_HEADER,
  workflowTrace,
} from '../../common/trace';
import { OtlpExporter, type ExportSpan } from '../../activities/tracing/otlp';
import { TRACING_PART } from '../../activities/tracing/settings';
import { enableTracing } from '../../activities/tracing/spans';
import { workerSettings } from '../../workers/settings';
import { conversations } from '../support/conversations';
import { testPlatform } from '../support/env';
import { waitFor } from '../support/operation-harness';
import { startSessionHarness, type SessionHarness } from '../support/session-harness';

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string; doubleValue?: number; boolValue?: boolean };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpAttribute[];
  status: { code?: number; message?: string };
}
interface OtlpRequest {
  resourceSpans: Array<{ resource: { attributes: OtlpAttribute[] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
}

/** An OTLP/HTTP endpoint that records what it is sent; `down` answers 503. */
async function startReceiver() {
  const requests: OtlpRequest[] = [];
  const state = { down: false };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (state.down || req.url !== '/v1/traces' || req.headers['content-type'] !== 'application/json') {
        res.writeHead(503).end('down');
        return;
      }
      requests.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpRequest);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    state,
    spans: () => requests.flatMap((r) => r.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans))),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const attr = (span: OtlpSpan, key: string): string | number | boolean | undefined => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  if (!value) return undefined;
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.stringValue ?? value.doubleValue ?? value.boolValue;
};

describe('trace ids', () => {
  it('derives every id from the workflow id, run, activity and attempt: the same on every worker', () => {
    const op = workflowTrace('op-1', undefined);
    expect(op).toEqual(workflowTrace('op-1', undefined));
    expect(op.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(op.rootSpanId).toMatch(/^[0-9a-f]{16}$/);
    expect(op.parentSpanId).toBeUndefined();
    expect(workflowTrace('op-2', undefined).traceId).not.toBe(op.traceId);

    // A child of a traced parent: the parent's trace, under the parent's root span.
    const child = workflowTrace('op-1.sub', { traceId: op.traceId, spanId: op.rootSpanId });
    expect(child).toEqual({ traceId: op.traceId, rootSpanId: rootSpanIdOf('op-1.sub'), parentSpanId: op.rootSpanId });

    expect(attemptSpanIdOf('run', 'act', 1)).toBe(attemptSpanIdOf('run', 'act', 1));
    expect(new Set([1, 2, 3].map((attempt) => attemptSpanIdOf('run', 'act', attempt))).size).toBe(3);
  });

  it('carries a parent as a W3C traceparent and refuses anything else', () => {
    const parent = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) };
    expect(encodeTraceParent(parent)).toBe(`00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`);
    expect(decodeTraceParent(encodeTraceParent(parent))).toEqual(parent);
    for (const bad of [
      undefined,
      42,
      '',
      'junk',
      `00-${'0'.repeat(32)}-${'b'.repeat(16)}-01`,
      `00-${'A'.repeat(32)}-x-01`,
    ])
      expect(decodeTraceParent(bad)).toBeUndefined();
  });
});

describe('tracing settings', () => {
  const read = (env: Record<string, string>) => TRACING_PART.read(env);

  it('is off without an endpoint, and sends to <endpoint>/v1/traces with one', () => {
    expect(read({})).toEqual({ ok: true, value: undefined });
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toEqual({
      ok: true,
      value: { url: 'http://collector:4318/v1/traces', headers: {}, serviceName: 'agent-worker', resource: {} },
    });
    expect(
      read({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=s%3Dcret, tenant=t1',
        OTEL_SERVICE_NAME: 'brain-7',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod',
      }),
    ).toEqual({
      ok: true,
      value: {
        url: 'https://traces.example/otlp',
        headers: { 'x-api-key': 's=cret', tenant: 't1' },
        serviceName: 'brain-7',
        resource: { 'deployment.environment': 'prod' },
      },
    });
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toEqual({
      ok: true,
      value: undefined,
    });
  });

  it('refuses a wrong variable by name, and a worker does not start with it', () => {
    const bad = read({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_HEADERS: 'novalue',
      OTEL_SDK_DISABLED: 'maybe',
    });
    expect(bad.ok).toBe(false);
    const problems = bad.ok ? [] : bad.problems;
    expect(problems).toEqual([
      expect.stringMatching(/^OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" is not an http\(s\) URL/),
      expect.stringMatching(/^OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported: .*http\/json/),
      expect.stringMatching(/^OTEL_EXPORTER_OTLP_HEADERS: "novalue" is not name=value/),
      expect.stringMatching(/^OTEL_SDK_DISABLED: "maybe" is not true or false/),
    ]);
    expect(() =>
      workerSettings('hands', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    ).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported/);
    expect(workerSettings('hands', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).tracing?.url).toBe(
      'http://c:4318/v1/traces',
    );
  });
});

describe('the OTLP exporter', () => {
  const span = (n: number): ExportSpan => ({
    traceId: 'a'.repeat(32),
    spanId: n.toString(16).padStart(16, '0'),
    parentSpanId: 'c'.repeat(16),
    name: `span ${n}`,
    kind: n % 2 ? 'client' : 'internal',
    startMs: 1_700_000_000_123,
    endMs: 1_700_000_000_456,
    attributes: { text: 'x', whole: 3, fraction: 0.25, flag: true },
    ...(n === 2 ? { error: 'it broke' } : {}),
  });

  it('sends OTLP/HTTP JSON, and keeps spans while the endpoint is down until it answers', async () => {
    const receiver = await startReceiver();
    const warnings: string[] = [];
    const exporter = new OtlpExporter(
      { url: `${receiver.endpoint}/v1/traces`, headers: {}, serviceName: 'test-worker', resource: { zone: 'z1' } },
      { batchSize: 2, flushMs: 60_000, warn: (line) => warnings.push(line) },
    );
    try {
      exporter.export(span(1));
      exporter.export(span(2)); // a full batch: sent without waiting for the timer
      await exporter.flush();
      expect(receiver.requests).toHaveLength(1);
      const [request] = receiver.requests;
      expect(request!.resourceSpans[0]!.resource.attributes).toEqual([
        { key: 'service.name', value: { stringValue: 'test-worker' } },
        { key: 'zone', value: { stringValue: 'z1' } },
      ]);
      expect(receiver.spans()).toEqual([
        {
          traceId: 'a'.repeat(32),
          spanId: '0000000000000001',
          parentSpanId: 'c'.repeat(16),
          name: 'span 1',
          kind: 3,
          startTimeUnixNano: '1700000000123000000',
          endTimeUnixNano: '1700000000456000000',
          attributes: [
            { key: 'text', value: { stringValue: 'x' } },
            { key: 'whole', value: { intValue: '3' } },
            { key: 'fraction', value: { doubleValue: 0.25 } },
            { key: 'flag', value: { boolValue: true } },
          ],
          status: {},
        },
        expect.objectContaining({ spanId: '0000000000000002', kind: 1, status: { code: 2, message: 'it broke' } }),
      ]);

      receiver.state.down = true;
      exporter.export(span(3));
      await exporter.flush();
      expect(receiver.spans()).toHaveLength(2);
      expect(warnings).toEqual([expect.stringMatching(/cannot export to .*HTTP 503.*kept for a later try/)]);
      receiver.state.down = false;
      exporter.export(span(4));
      await exporter.flush();
      expect(receiver.spans().map((s) => s.name)).toEqual(['span 1', 'span 2', 'span 3', 'span 4']);
      expect(warnings.at(-1)).toMatch(/exporting to .* again/);
    } finally {
      await receiver.close();
    }
  });
});

describe("an operation's spans on the real server", () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let s: SessionHarness;

  beforeAll(async () => {
    receiver = await startReceiver();
    // Before the harness makes its workers: they take the process's exporter when they are made.
    enableTracing({ url: `${receiver.endpoint}/v1/traces`, headers: {}, serviceName: 'agent-test', resource: {} });
    s = await startSessionHarness();
  });
  afterAll(async () => {
    await s?.close();
    await receiver?.close();
  });

  it("is one trace: the operation, its model steps and tool calls, the subagent's under it", async () => {
    s.h.model.setScript(
      conversations({
        'traced goal: count the files': [
          {
            toolCalls: [
              { id: 'toolu_traced_task', name: 'task', input: { description: 'mark', prompt: 'traced child: mark' } },
            ],
          },
          { toolCalls: [{ name: 'bash', input: { command: 'ls /workspace | wc -l' } }] },
          { text: 'parent done' },
        ],
        'traced child: mark': [
          { toolCalls: [{ name: 'write_file', input: { path: 'mark.txt', content: 'mark\n' } }] },
          { text: 'child done' },
        ],
      }),
    );
    const sessionId = s.newSession('traced');
    const first = s.h.model.requests.length;
    const accepted = await s.submit(sessionId, 'traced goal: count the files');
    const parent = await s.result(accepted.operationId);
    expect(parent.state).toBe('completed');
    const childId = subagentOperationIdOf(accepted.operationId, 'toolu_traced_task');
    const op = workflowTrace(accepted.operationId, undefined);

    const spans = await waitFor(() => {
      const found = receiver.spans().filter((span) => span.traceId === op.traceId);
      return Promise.resolve(found.some((span) => span.spanId === op.rootSpanId) ? found : undefined);
    }, "the operation's span");
    const ids = spans.map((span) => span.spanId);
    expect(new Set(ids).size).toBe(ids.length);

    // The operation's span: the trace's root, with the operation's outcome and tokens.
    const root = spans.find((span) => span.spanId === op.rootSpanId)!;
    expect(root).toMatchObject({ name: 'operation', kind: 1, status: {} });
    expect(root.parentSpanId).toBeUndefined();
    expect(attr(root, 'agent.state')).toBe('completed');
    expect(attr(root, 'agent.session.id')).toBe(sessionId);
    expect(attr(root, 'agent.turns')).toBe(parent.turns);
    expect(attr(root, 'gen_ai.usage.output_tokens')).toBe(parent.usage.output);
    expect(Number(attr(root, 'gen_ai.usage.input_tokens')) + Number(attr(root, 'gen_ai.usage.output_tokens'))).toBe(
      totalTokens(parent.usage),
    );

    // The subagent's operation: a child of the operation's span, in its trace.
    const child = spans.find((span) => span.spanId === rootSpanIdOf(childId))!;
    expect(child).toMatchObject({ name: 'operation', parentSpanId: op.rootSpanId });
    expect(attr(child, 'agent.lane')).toBe('subagent:toolu_traced_task');

    // Model steps: one per response, under their operation, with tokens; three the parent's, two the child's.
    const steps = spans.filter((span) => span.name === 'model step');
    const byParent = (id: string) => steps.filter((span) => span.parentSpanId === rootSpanIdOf(id));
    expect(byParent(accepted.operationId).map((span) => attr(span, 'agent.turn'))).toEqual([1, 2, 3]);
    expect(byParent(childId).map((span) => attr(span, 'agent.turn'))).toEqual([1, 2]);
    const served = s.h.model.requests.slice(first).filter((r) => r.status === 200 && r.usage);
    expect(steps).toHaveLength(served.length);
    for (const step of steps) {
      expect(step.kind).toBe(3);
      expect(attr(step, 'gen_ai.request.model')).toBe('scripted-model');
      expect(attr(step, 'agent.attempt')).toBe(1);
      expect(attr(step, 'agent.outcome')).toBe('completed');
      expect(Number(attr(step, 'gen_ai.usage.output_tokens'))).toBeGreaterThan(0);
    }
    const stepTokens = steps.reduce(
      (sum, step) =>
        sum + Number(attr(step, 'gen_ai.usage.input_tokens')) + Number(attr(step, 'gen_ai.usage.output_tokens')),
      0,
    );
    expect(stepTokens).toBe(totalTokens(parent.usage));

    // Tool calls: the child's write_file, the parent's bash, each under its own operation.
    const tool = (name: string) => spans.find((span) => span.name === `tool ${name}`)!;
    expect(tool('write_file').parentSpanId).toBe(rootSpanIdOf(childId));
    expect(tool('bash').parentSpanId).toBe(op.rootSpanId);
    expect([attr(tool('bash'), 'gen_ai.tool.name'), attr(tool('bash'), 'agent.tool.replay_policy')]).toEqual([
      'bash',
      'never',
    ]);
    expect(attr(tool('write_file'), 'agent.tool.replay_policy')).toBe('idempotent');
    expect(attr(tool('bash'), 'agent.attempt')).toBe(1);
    expect(attr(tool('bash'), 'agent.outcome')).toBe('completed');
    expect(attr(tool('bash'), 'agent.tool.exit_code')).toBe(0);
    expect(typeof attr(tool('bash'), 'gen_ai.tool.call.id')).toBe('string');

    // The session's own work is traced nowhere: only operations and coding tasks are.
    expect(receiver.spans().filter((span) => attr(span, 'temporal.workflow.id') === `session-${sessionId}`)).toEqual(
      [],
    );
  });
  it('runs a workflow whose trace header is malformed as one with no parent: its own trace', async () => {
    s.h.model.setScript(conversations({ 'traced goal: a bad header': [{ text: 'fine' }] }));
    // A start by hand (or by another program) with a header of the harness's name that is not a traceparent.
    const client = new Client({
      connection: s.h.temporal.connection,
      namespace: testPlatform().namespace,
      interceptors: {
        workflow: [
          {
            start: (input, next) =>
              next({
                ...input,
                headers: { ...input.headers, [TRACE_HEADER]: { metadata: {}, data: Buffer.from('x') } },
              }),
          },
        ],
      },
    });
    const workflowId = `op-bad-header-${process.pid}`;
    s.h.removeOnClose(workflowId);
    const handle = await client.workflow.start(OPERATION_WORKFLOW_TYPE, {
      taskQueue: s.h.brainQueue,
      workflowId,
      args: [{ goal: 'traced goal: a bad header', handsTaskQueue: s.h.handsQueue }],
    });
    expect(await operationResult(handle)).toMatchObject({ state: 'completed', finalText: 'fine' });
    const own = workflowTrace(workflowId, undefined);
    const spans = await waitFor(() => {
      const found = receiver.spans().filter((span) => span.traceId === own.traceId);
      return Promise.resolve(found.some((span) => span.spanId === own.rootSpanId) ? found : undefined);
    }, "the operation's span in its own trace");
    expect(spans.find((span) => span.spanId === own.rootSpanId)?.parentSpanId).toBeUndefined();
    expect(spans.filter((span) => span.name === 'model step').map((span) => span.parentSpanId)).toEqual([
      own.rootSpanId,
    ]);
  });
});
