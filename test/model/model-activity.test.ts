/**
 * The `callModel` activity on the real Temporal dev server, against the scripted Messages API
 * server: Temporal (not the SDK) retries retryable faults and honours a 429's retry-after, fails
 * non-retryable ones at once with their type, keeps the usage of a failed attempt, and cancels a
 * running stream.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { createModelActivities, ModelActivityDeps } from '../support/model-activities';
import { MODEL_FAILURE_TYPES, ModelRequest } from '../../common/model-types';
import type { ScriptedTurn } from '../../scripted-model/script';
import { ScriptedModelServer, ScriptedModelServerOptions, startScriptedModelServer } from '../../scripted-model/server';
import { scriptedSettings } from '../support/model-fixtures';
import { callModelOnce, CallModelOnceInput, CallModelOnceResult } from '../support/model-workflows';
import { connectTestTemporal, createTestWorker, TestTemporal, uniqueQueue } from '../support/temporal';

const REQUEST: ModelRequest = { messages: [{ role: 'user', content: 'Summarise the repository.' }] };

describe('callModel activity on Temporal', () => {
  let temporal: TestTemporal;
  let server: ScriptedModelServer;
  beforeAll(async () => {
    temporal = await connectTestTemporal();
  });
  afterAll(async () => {
    await temporal.close();
  });
  afterEach(async () => {
    await server?.stop();
  });

  async function run(
    turns: ScriptedTurn[],
    input: Omit<CallModelOnceInput, 'request'> = {},
    options: {
      server?: ScriptedModelServerOptions;
      deps?: ModelActivityDeps;
      whileRunning?: (handle: WorkflowHandle) => Promise<void>;
    } = {},
  ): Promise<{ result: CallModelOnceResult; attempts: number[] }> {
    server = await startScriptedModelServer({ script: turns, ...options.server });
    const taskQueue = uniqueQueue('model');
    const worker = await createTestWorker(temporal, {
      taskQueue,
      activities: createModelActivities({ settings: scriptedSettings(server), ...options.deps }),
    });
    return worker.runUntil(async () => {
      const handle = await temporal.client.workflow.start(callModelOnce, {
        taskQueue,
        workflowId: taskQueue,
        args: [{ request: REQUEST, ...input }],
      });
      await options.whileRunning?.(handle);
      const result = await handle.result();
      const history = await handle.fetchHistory();
      const attempts = (history.events ?? []).flatMap((event) =>
        event.activityTaskStartedEventAttributes ? [event.activityTaskStartedEventAttributes.attempt ?? 0] : [],
      );
      return { result, attempts };
    });
  }

  it('retries a retryable fault through Temporal, then succeeds', async () => {
    const { result, attempts } = await run([{ fault: { type: 'overloaded' } }, { text: 'recovered' }], {
      initialRetryIntervalMs: 200,
    });
    expect(result).toMatchObject({
      ok: true,
      reply: { message: { content: [{ type: 'text', text: 'recovered' }] }, stopReason: 'end_turn' },
    });
    expect(server.requests.map((request) => request.status)).toEqual([529, 200]);
    // One HTTP request per attempt: the retry was Temporal's (the completed attempt is the 2nd).
    expect(attempts).toEqual([2]);
    server.assertScriptFinished();
  });

  it('fails a non-retryable fault at once, with its type', async () => {
    const { result, attempts } = await run(
      [{ text: 'never' }],
      { initialRetryIntervalMs: 200 },
      { server: { apiKey: 'the-right-key' } },
    );
    expect(result).toEqual({
      ok: false,
      type: MODEL_FAILURE_TYPES.authenticationFailed,
      message: 'authentication failed (401): check ANTHROPIC_API_KEY [request req_scripted_0001]',
      nonRetryable: true,
      details: [expect.objectContaining({ status: 401, apiErrorType: 'authentication_error' })],
    });
    expect(server.requests).toHaveLength(1);
    expect(attempts).toEqual([1]);
  });

  it('fails at once with a clear message when the key is not configured', async () => {
    const { result } = await run([], {}, { deps: { settings: undefined, env: { AGENT_MODEL: 'x' } } });
    expect(result).toEqual({
      ok: false,
      type: MODEL_FAILURE_TYPES.notConfigured,
      message: 'the model is not configured: ANTHROPIC_API_KEY is not set: set it to an API key for the Messages API',
      nonRetryable: true,
      details: [],
    });
    expect(server.requests).toHaveLength(0);
  });

  it('retries a 429 only after the retry-after the server asked for', async () => {
    // Without the server's retry-after, Temporal would retry after the 100 ms initial interval.
    const { result } = await run(
      [{ fault: { type: 'rate_limit', retryAfterSeconds: 2 } }, { text: 'after the wait' }],
      { initialRetryIntervalMs: 100 },
    );
    expect(result.ok).toBe(true);
    const [limited, retried] = server.requests;
    expect([limited!.status, retried!.status]).toEqual([429, 200]);
    expect(retried!.receivedAt - limited!.receivedAt).toBeGreaterThanOrEqual(2000);
  });

  it('keeps the usage of an attempt that failed mid-stream', async () => {
    const { result } = await run(
      [{ text: 'x'.repeat(400), fault: { type: 'stream_error', afterBlocks: 1 } }, { text: 'complete answer' }],
      { initialRetryIntervalMs: 200 },
    );
    if (!result.ok) throw new Error(`expected success, got ${result.message}`);
    const [broken, complete] = server.requests;
    expect(broken!.error).toEqual({ type: 'overloaded_error', message: 'Overloaded' });
    expect(result.reply.failedAttemptsUsage).toEqual({
      input: broken!.usage!.input_tokens,
      cacheWrite: 0,
      cacheRead: 0,
      output: 1,
    });
    expect(result.reply.usage).toEqual({
      input: complete!.usage!.input_tokens,
      cacheWrite: 0,
      cacheRead: 0,
      output: complete!.usage!.output_tokens,
    });
  });

  it('aborts the stream when the activity is cancelled', async () => {
    const outcome = run(
      [{ text: 'an answer that never finishes', fault: { type: 'stall', ms: 60_000 } }],
      { heartbeatTimeoutMs: 2000 },
      {
        whileRunning: async (handle) => {
          await until(() => server.requests[0]?.status === 200);
          await handle.cancel();
          // While the worker still runs: the activity itself closed the HTTP stream.
          await until(() => server.requests[0]!.clientDisconnected);
        },
      },
    );
    await expect(outcome).rejects.toMatchObject({ name: 'WorkflowFailedError', cause: { name: 'CancelledFailure' } });
    expect(server.requests).toHaveLength(1);
  });
});

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
