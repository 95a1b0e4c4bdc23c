/**
 * Traces in a real Jaeger (built from its Go module), across a worker SIGKILL: a three-feature coding
 * task runs on `agent worker dev` processes exporting OTLP to Jaeger; the first process is killed
 * while the agent's commit command of the second feature runs and a second one finishes the task.
 * Read back from Jaeger's query API, the task is one trace: the task's span, its operations' spans
 * under it, every model step, tool call and git step under its operation — each span once (the
 * replayed workflows report nothing again), one model-step span per model response the server sent,
 * their tokens adding up to the server's own count, the killed tool call's surviving attempt marked.
 */
import * as path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { rootSpanIdOf, workflowTrace } from '../../common/trace';
import { freePort } from '../../platform/dev-server';
import { PROJECT_ROOT } from '../../platform/paths';
import { ensureJaeger, jaegerTrace, startJaeger, type JaegerSpan, type RunningJaeger } from '../../platform/jaeger';
import { agentProcessArgs } from '../support/compiled-entries';
import { inSandbox } from '../support/hands';
import { waitFor } from '../support/operation-harness';
import { startTaskHarness, taskResult, taskSessionId, type TaskHarness } from '../support/coding-task';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

jest.setTimeout(900_000);

const execFileAsync = promisify(execFile);

const tag = (span: JaegerSpan, key: string): unknown => span.tags.find((t) => t.key === key)?.value;
const parentOf = (span: JaegerSpan): string | undefined =>
  span.references.find((r) => r.refType === 'CHILD_OF')?.spanID;

describe('traces in Jaeger across a worker SIGKILL', () => {
  let h: TaskHarness;
  let jaeger: RunningJaeger;
  const workers: WorkerProcess[] = [];

  const startWorker = (name: string): WorkerProcess => {
    const worker = startWorkerProcess({
      role: 'dev',
      brainQueue: h.brainQueue,
      handsQueue: h.handsQueue,
      modelUrl: h.model.url,
      env: {
        AGENT_TASKS_DIR: h.tasksDir,
        OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
        OTEL_SERVICE_NAME: name,
      },
    });
    workers.push(worker);
    return worker;
  };

  beforeAll(async () => {
    const binary = await ensureJaeger(undefined, (line) => console.log(line));
    h = await startTaskHarness({ holdBeforeCommit: 'words' }, { workers: 'none' });
    // Three different free ports (two calls may name the same one: each is free only on its own).
    const picked = new Set<number>();
    while (picked.size < 3) picked.add(await freePort());
    const [otlp, query, queryGrpc] = [...picked] as [number, number, number];
    const ports = { otlp, query, queryGrpc };
    jaeger = await startJaeger(binary, ports, { dir: path.join(h.dir, 'jaeger') });
  }, 900_000);

  afterAll(async () => {
    for (const worker of workers) await worker.stop();
    await jaeger?.stop();
    await h?.close();
  });

  it('shows the task as one trace, each span once, tokens equal to the model server', async () => {
    const taskId = `traced-${process.pid}`;
    const session = taskSessionId(taskId);
    const trace = workflowTrace(taskId, undefined);
    const spans = async () => jaegerTrace(jaeger.queryUrl, trace.traceId);
    const completedResponses = () =>
      h.model.requests.filter((r) => r.messagesRequest && r.status === 200 && !r.clientDisconnected && r.reportedUsage);

    const first = startWorker('agent-worker-1');
    const handle = await h.start({ branch: 'agent/traced', specPath: 'SPEC.md', verify: 'npm test' }, taskId);
    await waitFor(
      async () => (await inSandbox(session, 'cat /workspace/.agent/commit-effects.log'))?.includes('words'),
      'the words feature to reach its commit command',
      300_000,
    );
    // Every model response so far reached Jaeger before the kill (no model call runs now: the
    // agent's commit command does), so the kill takes no finished span with it.
    const answered = completedResponses().length;
    await waitFor(
      async () => (await spans()).filter((s) => tag(s, 'gen_ai.operation.name') === 'chat').length >= answered,
      "the first worker's model-step spans in Jaeger",
    );
    await first.kill();
    startWorker('agent-worker-2');
    await inSandbox(session, 'touch /tmp/release-words');
    const result = await taskResult(handle);
    expect(result.state).toBe('completed');

    // The task's span is reported as it ends; the exporter sends within a second.
    const all = await waitFor(async () => {
      const found = await spans();
      return found.some((s) => s.spanID === trace.rootSpanId) ? found : undefined;
    }, "the task's span in Jaeger");

    // Each span once: no id twice, and no replayed step reported again.
    const ids = all.map((s) => s.spanID);
    expect(new Set(ids).size).toBe(ids.length);
    expect(all.every((s) => s.traceID === trace.traceId)).toBe(true);

    const root = all.find((s) => s.spanID === trace.rootSpanId)!;
    expect(root.operationName).toBe('coding task');
    expect(parentOf(root)).toBeUndefined();
    expect(tag(root, 'agent.state')).toBe('completed');
    expect(tag(root, 'agent.task.features_passing')).toBe(3);

    // The task's operations hang under the task; every other span under its workflow's root.
    const operations = all.filter((s) => s.operationName === 'operation');
    expect(operations.length).toBeGreaterThanOrEqual(4); // the initializer and one per feature
    for (const op of operations) {
      expect(parentOf(op)).toBe(trace.rootSpanId);
      expect(op.spanID).toBe(rootSpanIdOf(String(tag(op, 'temporal.workflow.id'))));
      expect(tag(op, 'agent.state')).toBe('completed');
    }
    const roots = new Set([trace.rootSpanId, ...operations.map((op) => op.spanID)]);
    for (const span of all.filter((s) => !roots.has(s.spanID))) {
      expect(parentOf(span)).toBe(rootSpanIdOf(String(tag(span, 'temporal.workflow.id'))));
      expect(roots.has(parentOf(span)!)).toBe(true);
    }

    // One model-step span per model response, each step of an operation once, tokens as the server counted.
    const steps = all.filter((s) => tag(s, 'gen_ai.operation.name') === 'chat');
    const responses = completedResponses();
    expect(steps.length).toBe(responses.length);
    const perOperationTurn = steps.map((s) => `${tag(s, 'temporal.workflow.id')}#${tag(s, 'agent.turn')}`);
    expect(new Set(perOperationTurn).size).toBe(steps.length);
    const sum = (values: unknown[]) => values.reduce<number>((total, v) => total + Number(v ?? 0), 0);
    const served = responses.map((r) => r.reportedUsage!);
    expect(sum(steps.map((s) => tag(s, 'gen_ai.usage.output_tokens')))).toBe(sum(served.map((u) => u.output_tokens)));
    expect(sum(steps.map((s) => tag(s, 'gen_ai.usage.input_tokens')))).toBe(
      sum(served.map((u) => u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens)),
    );
    expect(tag(root, 'gen_ai.usage.output_tokens')).toBe(result.usage.output);
    expect(result.usage.output).toBe(sum(served.map((u) => u.output_tokens)));
    for (const step of steps) {
      expect(tag(step, 'gen_ai.request.model')).toBe('scripted-model');
      expect(tag(step, 'agent.outcome')).toBe('completed');
    }

    // Tool calls: name and replay policy; the commit command cut by the kill shows only the attempt
    // that completed, on the second worker.
    const tools = all.filter((s) => s.operationName.startsWith('tool '));
    expect(tools.length).toBeGreaterThan(0);
    for (const tool of tools) {
      expect(tag(tool, 'gen_ai.tool.name')).toBe(tool.operationName.slice('tool '.length));
      expect(['safe', 'idempotent', 'never']).toContain(tag(tool, 'agent.tool.replay_policy'));
      expect(Number(tag(tool, 'agent.attempt'))).toBeGreaterThanOrEqual(1);
    }
    const callOf = (span: JaegerSpan) => `${tag(span, 'temporal.run.id')}#${tag(span, 'temporal.activity.id')}`;
    const perAttempt = tools.map((span) => `${callOf(span)}#${tag(span, 'agent.attempt')}`);
    expect(new Set(perAttempt).size).toBe(tools.length);
    const resumed = tools.filter((span) => Number(tag(span, 'agent.attempt')) > 1);
    const cut = resumed.filter(
      (span) => !tools.some((other) => callOf(other) === callOf(span) && tag(other, 'agent.attempt') === 1),
    );
    expect(
      cut.map((span) => [span.operationName, tag(span, 'agent.tool.replay_policy'), tag(span, 'agent.outcome')]),
    ).toEqual([['tool bash', 'never', 'completed']]);

    // Both workers exported: the spans name the process that made them.
    const services = new Set(all.map((span) => span.service));
    expect(services).toEqual(new Set(['agent-worker-1', 'agent-worker-2']));
    expect(h.model.scriptErrors).toEqual([]);

    // `agent trace` prints the same trace as a tree: the task, its operations indented under it, their
    // steps under them; an operation of the task is found in the task's trace by its tag.
    const agentTrace = async (id: string) =>
      (
        await execFileAsync(process.execPath, agentProcessArgs('trace', id, '--jaeger', jaeger.queryUrl), {
          cwd: PROJECT_ROOT,
          encoding: 'utf8',
        })
      ).stdout.split('\n');
    const tree = await agentTrace(taskId);
    expect(tree[0]).toMatch(new RegExp(`^coding task · ${taskId} · completed · .* in / .* out · \\$`));
    const opLines = tree.filter((line) => /^ {2}operation · /.test(line));
    expect(opLines).toHaveLength(operations.length);
    expect(tree.filter((line) => /^ {4}model step · .*turn \d+ · .* in \/ .* out/.test(line))).toHaveLength(
      steps.filter((s) => s.operationName === 'model step').length,
    );
    expect(
      tree.some((line) => /^ {4}tool bash · \(never\) · attempt 2 · exit 0 · .*\[agent-worker-2\]/.test(line)),
    ).toBe(true);
    const firstOperation = String(tag(operations[0]!, 'temporal.workflow.id'));
    expect((await agentTrace(firstOperation)).join('\n')).toBe(tree.join('\n'));
  });
});
