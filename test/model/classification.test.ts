/**
 * Error classification at the model boundary: every fault class, produced by the scripted server
 * (or a dead port) and received through the real SDK, becomes the typed ApplicationFailure a
 * person and the retry policy can act on. Also: settings validation and cancellation.
 */
import * as net from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { MODEL_FAILURE_TYPES, ModelFailureDetails, ModelRequest } from '../../common/model-types';
import { retryAfterFromHeaders } from '../../activities/model/classify';
import { sendMessagesRequest } from '../../activities/model/messages-request';
import { ModelSettings, readModelSettings } from '../../activities/model/settings';
import type { ScriptedFault, ScriptedTurn } from '../../scripted-model/script';
import { ScriptedModelServer, ScriptedModelServerOptions, startScriptedModelServer } from '../../scripted-model/server';
import { scriptedClient, scriptedSettings } from '../support/model-fixtures';

const REQUEST: ModelRequest = { messages: [{ role: 'user', content: 'hello' }] };

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await promise.then(
    () => {
      throw new Error('expected the model call to fail');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApplicationFailure);
  return error as ApplicationFailure;
}

function detailsOf(failure: ApplicationFailure): ModelFailureDetails {
  return failure.details![0] as ModelFailureDetails;
}

describe('model error classification', () => {
  let server: ScriptedModelServer;
  afterEach(async () => {
    await server?.stop();
  });

  async function call(
    turns: ScriptedTurn[],
    settings: Partial<ModelSettings> = {},
    serverOptions: ScriptedModelServerOptions = {},
    request: ModelRequest = REQUEST,
  ) {
    server = await startScriptedModelServer({ script: turns, ...serverOptions });
    return sendMessagesRequest({
      client: scriptedClient(server, settings),
      settings: scriptedSettings(server, settings),
      request,
    });
  }

  const retryable: Array<[string, ScriptedFault, string, RegExp]> = [
    [
      '429',
      { type: 'rate_limit', retryAfterSeconds: 2 },
      MODEL_FAILURE_TYPES.rateLimited,
      /^rate limited by the model API \(429\); the server asked to wait 2s \[request req_scripted_0001\]$/,
    ],
    ['529', { type: 'overloaded' }, MODEL_FAILURE_TYPES.overloaded, /^the model API is overloaded \(529\)/],
    ['500', { type: 'server_error', status: 500 }, MODEL_FAILURE_TYPES.serverError, /^the model API failed with 500/],
    ['502', { type: 'server_error', status: 502 }, MODEL_FAILURE_TYPES.serverError, /^the model API failed with 502/],
    ['503', { type: 'server_error', status: 503 }, MODEL_FAILURE_TYPES.serverError, /^the model API failed with 503/],
    ['504', { type: 'server_error', status: 504 }, MODEL_FAILURE_TYPES.serverError, /^the model API failed with 504/],
    [
      'a mid-stream error event',
      { type: 'stream_error', afterBlocks: 1 },
      MODEL_FAILURE_TYPES.streamError,
      /^the model stream broke off with overloaded_error after \d+ events: Overloaded/,
    ],
    [
      'a connection dropped before the answer',
      { type: 'drop_connection' },
      MODEL_FAILURE_TYPES.connectionFailed,
      /^could not reach the model API at http:\/\/127\.0\.0\.1:\d+ \(check ANTHROPIC_BASE_URL/,
    ],
    [
      'a connection dropped mid-stream',
      { type: 'drop_connection', afterBlocks: 1 },
      MODEL_FAILURE_TYPES.connectionFailed,
      /^the connection to the model API broke while the response was streaming/,
    ],
  ];

  it.each(retryable)('classifies %s as retryable', async (_name, fault, type, message) => {
    const failure = await failureOf(call([{ text: 'the first block of an answer', toolCalls: [], fault }]));
    expect(failure.type).toBe(type);
    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toMatch(message);
  });

  it('carries the 429 retry-after as nextRetryDelay, preferring retry-after-ms', async () => {
    const seconds = await failureOf(call([{ fault: { type: 'rate_limit', retryAfterSeconds: 2 } }]));
    expect(seconds.nextRetryDelay).toBe(2000);
    expect(detailsOf(seconds)).toEqual({
      status: 429,
      apiErrorType: 'rate_limit_error',
      requestId: 'req_scripted_0001',
      usage: null,
      failedAttemptsUsage: null,
      retryAfterMs: 2000,
    });
    await server.stop();
    const millis = await failureOf(call([{ fault: { type: 'rate_limit', retryAfterSeconds: 2, retryAfterMs: 1500 } }]));
    expect(millis.nextRetryDelay).toBe(1500);
    expect(
      retryAfterFromHeaders(new Headers({ 'retry-after': 'Wed, 21 Oct 2026 07:28:30 GMT' }), () =>
        Date.parse('Wed, 21 Oct 2026 07:28:00 GMT'),
      ),
    ).toBe(30_000);
    expect(retryAfterFromHeaders(new Headers({}))).toBeNull();
  });

  it('reports the usage a stream had received before it broke off', async () => {
    const failure = await failureOf(call([{ text: 'x'.repeat(64), fault: { type: 'stream_error', afterBlocks: 1 } }]));
    const usage = server.requests[0]!.usage!;
    expect(detailsOf(failure).usage).toEqual({ input: usage.input_tokens, cacheWrite: 0, cacheRead: 0, output: 1 });
    expect(detailsOf(failure).apiErrorType).toBe('overloaded_error');
  });

  it('classifies an unreachable server as a retryable connection failure', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    const dead = { url: `http://127.0.0.1:${port}` };
    const failure = await failureOf(
      sendMessagesRequest({ client: scriptedClient(dead), settings: scriptedSettings(dead), request: REQUEST }),
    );
    expect(failure.type).toBe(MODEL_FAILURE_TYPES.connectionFailed);
    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toBe(
      `could not reach the model API at http://127.0.0.1:${port} (check ANTHROPIC_BASE_URL and the network)`,
    );
  });

  it('classifies a request timeout and a stalled stream as retryable timeouts', async () => {
    const slow = await failureOf(call([{ text: 'late', latencyMs: 2000 }], { requestTimeoutMs: 200 }));
    expect(slow.type).toBe(MODEL_FAILURE_TYPES.timedOut);
    expect(slow.nonRetryable).toBe(false);
    expect(slow.message).toMatch(/did not answer in time \(AGENT_MODEL_TIMEOUT_MS\)/);
    await server.stop();

    const stalled = await failureOf(
      call([{ text: 'first block', toolCalls: [], fault: { type: 'stall', ms: 5000, afterBlocks: 1 } }], {
        streamIdleTimeoutMs: 300,
      }),
    );
    expect(stalled.type).toBe(MODEL_FAILURE_TYPES.timedOut);
    expect(stalled.nonRetryable).toBe(false);
    expect(stalled.message).toMatch(
      /^the model stream stalled: no event for 0\.3s after \d+ events \(AGENT_MODEL_IDLE_TIMEOUT_MS\)/,
    );
    expect(detailsOf(stalled).usage).not.toBeNull();
    await waitFor(() => server.requests[0]!.clientDisconnected);
  });

  const nonRetryable: Array<[string, ScriptedFault, string, string]> = [
    [
      '400',
      { type: 'http_error', status: 400, errorType: 'invalid_request_error', message: 'messages.0.content: bad block' },
      MODEL_FAILURE_TYPES.invalidRequest,
      'the model API rejected the request as invalid (400): messages.0.content: bad block',
    ],
    [
      '401',
      { type: 'http_error', status: 401, errorType: 'authentication_error', message: 'invalid x-api-key' },
      MODEL_FAILURE_TYPES.authenticationFailed,
      'authentication failed (401): check ANTHROPIC_API_KEY',
    ],
    [
      '403',
      { type: 'http_error', status: 403, errorType: 'permission_error', message: 'no access' },
      MODEL_FAILURE_TYPES.permissionDenied,
      'permission denied (403): the key in ANTHROPIC_API_KEY may not use model "scripted-model": no access',
    ],
    [
      '404',
      { type: 'http_error', status: 404, errorType: 'not_found_error', message: 'model: scripted-model' },
      MODEL_FAILURE_TYPES.notFound,
      'not found (404): check AGENT_MODEL ("scripted-model") and ANTHROPIC_BASE_URL',
    ],
    [
      '413',
      { type: 'http_error', status: 413, errorType: 'request_too_large', message: 'too big' },
      MODEL_FAILURE_TYPES.requestTooLarge,
      'the request is too large for the model API (413): compact the conversation or shorten tool results: too big',
    ],
    [
      '402',
      { type: 'http_error', status: 402, errorType: 'invalid_request_error', message: 'billing' },
      MODEL_FAILURE_TYPES.requestRejected,
      'the model API refused the request (402): billing',
    ],
  ];

  it.each(nonRetryable)(
    'classifies %s as non-retryable with a message a person understands',
    async (_name, fault, type, message) => {
      const failure = await failureOf(call([{ fault }]));
      expect(failure.type).toBe(type);
      expect(failure.nonRetryable).toBe(true);
      expect(failure.message.startsWith(message)).toBe(true);
      expect(failure.message).toMatch(/\[request req_scripted_0001\]$/);
    },
  );

  it('classifies real rejections of the server the same way', async () => {
    const wrongKey = await failureOf(call([{ text: 'x' }], { apiKey: 'wrong' }, { apiKey: 'right' }));
    expect([wrongKey.type, wrongKey.nonRetryable]).toEqual([MODEL_FAILURE_TYPES.authenticationFailed, true]);
    await server.stop();
    const unknownModel = await failureOf(
      call([{ text: 'x' }], { model: 'no-such-model' }, { models: ['scripted-model'] }),
    );
    expect([unknownModel.type, unknownModel.nonRetryable]).toEqual([MODEL_FAILURE_TYPES.notFound, true]);
    await server.stop();
    const tooLarge = await failureOf(call([{ text: 'x' }], {}, { maxRequestBytes: 100 }));
    expect([tooLarge.type, tooLarge.nonRetryable]).toEqual([MODEL_FAILURE_TYPES.requestTooLarge, true]);
    await server.stop();
    const invalid = await failureOf(
      call([{ text: 'x' }], {}, {}, { messages: [{ role: 'assistant', content: 'I go first' }] }),
    );
    expect(invalid.type).toBe(MODEL_FAILURE_TYPES.invalidRequest);
    expect(invalid.message).toContain('messages: first message must use the "user" role');
  });

  it('rejects with the abort reason when the caller cancels', async () => {
    server = await startScriptedModelServer({
      script: [{ text: 'slow answer', toolCalls: [], fault: { type: 'stall', ms: 5000, afterBlocks: 0 } }],
    });
    const controller = new AbortController();
    const reason = new Error('operation aborted by the user');
    const pending = sendMessagesRequest({
      client: scriptedClient(server),
      settings: scriptedSettings(server),
      request: REQUEST,
      signal: controller.signal,
    });
    await waitFor(() => server.requests.length === 1 && server.requests[0]!.status === 200);
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await waitFor(() => server.requests[0]!.clientDisconnected);
  });
});

describe('model settings from the environment', () => {
  it('names the variable to set when the key is missing', () => {
    expect(readModelSettings({})).toEqual({
      ok: false,
      problems: ['ANTHROPIC_API_KEY is not set: set it to an API key for the Messages API'],
    });
    expect(readModelSettings({ ANTHROPIC_API_KEY: '  ' })).toMatchObject({
      ok: false,
      problems: ['ANTHROPIC_API_KEY is not set: set it to an API key for the Messages API'],
    });
  });

  it('names every invalid variable', () => {
    const result = readModelSettings({
      ANTHROPIC_API_KEY: 'k',
      ANTHROPIC_BASE_URL: 'not a url',
      AGENT_MAX_TOKENS: '-5',
      AGENT_PROMPT_CACHE_TTL: '10m',
      AGENT_MODEL_TIMEOUT_MS: 'soon',
    });
    expect(result).toEqual({
      ok: false,
      problems: [
        'ANTHROPIC_BASE_URL must be an http(s) URL',
        'AGENT_MAX_TOKENS must be positive',
        'AGENT_MODEL_TIMEOUT_MS must be a number',
        'AGENT_PROMPT_CACHE_TTL must be 5m or 1h',
      ],
    });
  });

  it('fills in defaults and reads every variable', () => {
    expect(readModelSettings({ ANTHROPIC_API_KEY: 'k' })).toEqual({
      ok: true,
      settings: {
        apiKey: 'k',
        baseURL: undefined,
        model: 'claude-sonnet-4-6',
        maxTokens: 16000,
        requestTimeoutMs: 120000,
        streamIdleTimeoutMs: 120000,
        promptCacheTtl: '5m',
      },
    });
    expect(
      readModelSettings({
        ANTHROPIC_API_KEY: 'k',
        ANTHROPIC_BASE_URL: 'http://127.0.0.1:9000',
        AGENT_MODEL: 'm',
        AGENT_MAX_TOKENS: '2048',
        AGENT_MODEL_TIMEOUT_MS: '5000',
        AGENT_MODEL_IDLE_TIMEOUT_MS: '7000',
        AGENT_PROMPT_CACHE_TTL: '1h',
      }),
    ).toEqual({
      ok: true,
      settings: {
        apiKey: 'k',
        baseURL: 'http://127.0.0.1:9000',
        model: 'm',
        maxTokens: 2048,
        requestTimeoutMs: 5000,
        streamIdleTimeoutMs: 7000,
        promptCacheTtl: '1h',
      },
    });
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
