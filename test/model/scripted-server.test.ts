/**
 * The scripted Messages API server, driven by the real SDK over real HTTP: response shapes in both
 * modes, the SSE event sequence, validation, scripts that run out or go off-script, faults that
 * change the answer, the request log and the command-line entry.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type Anthropic from '@anthropic-ai/sdk';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { sendMessagesRequest } from '../../activities/model/messages-request';
import { usageFromApi } from '../../activities/model/message-accumulator';
import { parseScriptedModelArgs } from '../../scripted-model/cli';
import { assertRequestsExtendPrefix, prefixViolation } from '../../scripted-model/prefix';
import { thinkingSignature } from '../../scripted-model/thinking';
import type { ScriptedTurn } from '../../scripted-model/script';
import { ScriptedModelServer, startScriptedModelServer } from '../../scripted-model/server';
import { READ_TOOL, scriptedClient, scriptedSettings } from '../support/model-fixtures';

const USER_HELLO: MessageParam[] = [{ role: 'user', content: 'hello' }];

describe('scripted Messages API server', () => {
  let server: ScriptedModelServer;
  let client: Anthropic;
  beforeEach(async () => {
    server = await startScriptedModelServer();
    client = scriptedClient(server);
  });
  afterEach(async () => {
    await server.stop();
  });

  const post = async (
    body: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; requestId: string | null; json: unknown; text: string }> => {
    const response = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      // SSE or not JSON
    }
    return { status: response.status, requestId: response.headers.get('request-id'), json, text };
  };

  describe('answers', () => {
    const turn: ScriptedTurn = {
      thinking: 'The user wants a file read; I will read it.',
      text: 'Let me read that file for you, it may take a moment.',
      toolCalls: [{ name: 'read', input: { path: 'src/index.ts', limit: 40 } }],
    };
    const thinkingRequest = {
      max_tokens: 4000,
      thinking: { type: 'enabled' as const, budget_tokens: 2000 },
      tools: [READ_TOOL],
      messages: USER_HELLO,
    };

    it('parses to the same message streamed and not streamed', async () => {
      server.setScript([turn]);
      const plain = await client.messages.create({ model: 'scripted-model', ...thinkingRequest });
      server.setScript([turn]);
      const streamed = await sendMessagesRequest({
        client,
        settings: scriptedSettings(server),
        request: {
          model: 'scripted-model',
          maxTokens: 4000,
          thinking: thinkingRequest.thinking,
          tools: [READ_TOOL],
          messages: USER_HELLO,
        },
      });

      const { usage, ...message } = plain;
      expect(streamed.message).toEqual(message);
      expect(streamed.usage).toEqual(usageFromApi(usage));
      expect(streamed.stopReason).toBe('tool_use');
      expect(streamed.requestId).toBe(server.requests[1]!.requestId);
      expect(message.content).toEqual([
        { type: 'thinking', thinking: turn.thinking, signature: thinkingSignature(turn.thinking!) },
        { type: 'text', text: turn.text },
        { type: 'tool_use', id: 'toolu_01', name: 'read', input: { path: 'src/index.ts', limit: 40 } },
      ]);
      expect(message).toMatchObject({
        id: 'msg_scripted_0001',
        type: 'message',
        role: 'assistant',
        model: 'scripted-model',
        stop_reason: 'tool_use',
        stop_sequence: null,
      });

      server.setScript([turn]);
      const viaSdkStream = await client.messages.stream({ model: 'scripted-model', ...thinkingRequest }).finalMessage();
      expect(viaSdkStream.content).toEqual(message.content);
    });

    it('streams the real event sequence with chunked deltas and cumulative usage', async () => {
      server.setScript([turn]);
      const { status, text } = await post({ model: 'm', stream: true, ...thinkingRequest });
      expect(status).toBe(200);
      const events = text
        .trim()
        .split('\n\n')
        .map((chunk) => {
          const [eventLine, dataLine] = chunk.split('\n');
          return {
            event: eventLine!.slice('event: '.length),
            data: JSON.parse(dataLine!.slice('data: '.length)) as Record<string, unknown>,
          };
        });
      const compact = events.map((e) =>
        e.event === 'content_block_delta' ? `delta:${(e.data.delta as { type: string }).type}` : e.event,
      );
      const squeezed = compact.filter((name, i) => name !== compact[i - 1]);
      expect(squeezed).toEqual([
        'message_start',
        'ping',
        'content_block_start',
        'delta:thinking_delta',
        'delta:signature_delta',
        'content_block_stop',
        'content_block_start',
        'delta:text_delta',
        'content_block_stop',
        'content_block_start',
        'delta:input_json_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ]);
      expect(compact.filter((name) => name === 'delta:text_delta').length).toBeGreaterThan(1);
      const jsonChunks = events
        .filter((e) => (e.data.delta as { type?: string } | undefined)?.type === 'input_json_delta')
        .map((e) => (e.data.delta as { partial_json: string }).partial_json);
      expect(jsonChunks[0]).toBe('');
      expect(jsonChunks.length).toBeGreaterThan(2);
      expect(JSON.parse(jsonChunks.join(''))).toEqual({ path: 'src/index.ts', limit: 40 });

      const start = events[0]!.data.message as {
        content: unknown[];
        usage: Record<string, number>;
        stop_reason: unknown;
      };
      expect(start.content).toEqual([]);
      expect(start.stop_reason).toBeNull();
      expect(start.usage.output_tokens).toBe(1);
      const delta = events.find((e) => e.event === 'message_delta')!.data;
      expect(delta.delta).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
      expect(delta.usage).toEqual({
        input_tokens: start.usage.input_tokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: server.requests[0]!.usage!.output_tokens,
      });
    });

    it('answers from a function of the request, e.g. the last tool result', async () => {
      server.setScript([
        { toolCalls: [{ name: 'read', input: { path: 'VERSION' } }] },
        {
          respond: (request) => ({
            text: `version is ${request.toolResults[0]!.content} (from ${request.toolResults[0]!.toolName})`,
          }),
        },
      ]);
      const settings = scriptedSettings(server);
      const first = await sendMessagesRequest({
        client,
        settings,
        request: { tools: [READ_TOOL], messages: USER_HELLO },
      });
      const toolUse = first.message.content[0] as { id: string };
      expect(toolUse.id).toBe('toolu_01');
      const second = await sendMessagesRequest({
        client,
        settings,
        request: {
          tools: [READ_TOOL],
          messages: [
            ...USER_HELLO,
            { role: 'assistant', content: first.message.content },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '1.4.2' }] },
          ],
        },
      });
      expect(second.message.content).toEqual([{ type: 'text', text: 'version is 1.4.2 (from read)' }]);
      server.assertScriptFinished();

      server.setScript((request) => (request.turnIndex < 2 ? { text: `turn ${request.turnIndex}` } : undefined));
      const replies = [];
      for (let i = 0; i < 2; i++)
        replies.push((await client.messages.create({ model: 'm', max_tokens: 10, messages: USER_HELLO })).content);
      expect(replies).toEqual([[{ type: 'text', text: 'turn 0' }], [{ type: 'text', text: 'turn 1' }]]);
      await expect(client.messages.create({ model: 'm', max_tokens: 10, messages: USER_HELLO })).rejects.toMatchObject({
        status: 400,
      });
      expect(server.scriptErrors).toHaveLength(1);
    });

    it('cuts an answer at max_tokens, in both modes, keeping a cut tool call incomplete', async () => {
      server.setScript([{ text: 'x'.repeat(100) }]);
      const cut = await client.messages.create({ model: 'm', max_tokens: 5, messages: USER_HELLO });
      expect(cut.stop_reason).toBe('max_tokens');
      expect(cut.content).toEqual([{ type: 'text', text: 'x'.repeat(20) }]);
      expect(cut.usage.output_tokens).toBe(5);

      const callTurn: ScriptedTurn = {
        text: 'abcd',
        toolCalls: [{ name: 'read', input: { path: 'p'.repeat(20), limit: 1000000 } }],
        fault: { type: 'cut_at_max_tokens', outputTokens: 10 },
      };
      server.setScript([callTurn]);
      const plain = await client.messages.create({
        model: 'm',
        max_tokens: 100,
        tools: [READ_TOOL],
        messages: USER_HELLO,
      });
      server.setScript([callTurn]);
      const streamed = await sendMessagesRequest({
        client,
        settings: scriptedSettings(server),
        request: { maxTokens: 100, tools: [READ_TOOL], messages: USER_HELLO },
      });
      expect(plain.stop_reason).toBe('max_tokens');
      expect(plain.content).toEqual([
        { type: 'text', text: 'abcd' },
        { type: 'tool_use', id: 'toolu_01', name: 'read', input: { path: 'p'.repeat(20) } },
      ]);
      expect(streamed.message.content).toEqual(plain.content);
      expect(streamed.usage.output).toBe(10);
    });

    it('injects malformed tool calls that violate the tool schema', async () => {
      const input = { path: 'a.ts', limit: 3 };
      const answer = async (mutation: 'invented_field' | 'missing_required' | 'wrong_type') => {
        server.setScript([{ toolCalls: [{ name: 'read', input }], fault: { type: 'malformed_tool_call', mutation } }]);
        const reply = await client.messages.create({
          model: 'm',
          max_tokens: 100,
          tools: [READ_TOOL],
          messages: USER_HELLO,
        });
        return (reply.content[0] as { input: unknown }).input;
      };
      expect(await answer('invented_field')).toEqual({ path: 'a.ts', limit: 3, path2: 'a.ts' });
      expect(await answer('missing_required')).toEqual({ limit: 3 });
      expect(await answer('wrong_type')).toEqual({ path: 12345, limit: 3 });
    });

    it('stops at a stop sequence', async () => {
      server.setScript([{ text: 'one two STOP three', toolCalls: [{ name: 'read', input: { path: 'x' } }] }]);
      const reply = await client.messages.create({
        model: 'm',
        max_tokens: 100,
        stop_sequences: ['STOP'],
        tools: [READ_TOOL],
        messages: USER_HELLO,
      });
      expect(reply.content).toEqual([{ type: 'text', text: 'one two ' }]);
      expect(reply.stop_reason).toBe('stop_sequence');
      expect(reply.stop_sequence).toBe('STOP');
    });

    it('counts tokens', async () => {
      const response = await client.messages.countTokens({
        model: 'm',
        system: 's'.repeat(40),
        messages: [{ role: 'user', content: 'u'.repeat(8) }],
      });
      expect(response.input_tokens).toBe(12);
    });
  });

  describe('faults', () => {
    it('answers 429 with retry-after, 529, 5xx, and an error event mid-stream', async () => {
      server.setScript([
        { fault: { type: 'rate_limit', retryAfterSeconds: 2, retryAfterMs: 1500 } },
        { fault: { type: 'overloaded' } },
        { fault: { type: 'server_error', status: 503 } },
        { text: 'partial answer', fault: { type: 'stream_error', afterBlocks: 1 } },
      ]);
      const limited = await fetch(`${server.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', max_tokens: 10, messages: USER_HELLO }),
      });
      expect(limited.status).toBe(429);
      expect(limited.headers.get('retry-after')).toBe('2');
      expect(limited.headers.get('retry-after-ms')).toBe('1500');
      expect(await limited.json()).toEqual({
        type: 'error',
        error: { type: 'rate_limit_error', message: expect.any(String) },
        request_id: limited.headers.get('request-id'),
      });
      expect((await post({ model: 'm', max_tokens: 10, messages: USER_HELLO })).json).toMatchObject({
        error: { type: 'overloaded_error' },
      });
      expect(server.requests[1]!.status).toBe(529);
      expect((await post({ model: 'm', max_tokens: 10, messages: USER_HELLO })).status).toBe(503);
      const streamed = await post({ model: 'm', max_tokens: 10, stream: true, messages: USER_HELLO });
      expect(streamed.status).toBe(200);
      const lastEvent = streamed.text.trim().split('\n\n').at(-1)!;
      expect(lastEvent.split('\n')[0]).toBe('event: error');
      expect(streamed.text).toContain('"text_delta"');
      expect(streamed.text).not.toContain('message_stop');
      server.assertScriptFinished();
    });

    it('adds latency before the answer', async () => {
      server.setScript([{ text: 'slow', latencyMs: 300 }]);
      const started = Date.now();
      await client.messages.create({ model: 'm', max_tokens: 10, messages: USER_HELLO });
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    });
  });

  describe('validation', () => {
    const tooManyBreakpoints = {
      model: 'm',
      max_tokens: 10,
      system: [1, 2, 3].map((n) => ({ type: 'text', text: `part ${n}`, cache_control: { type: 'ephemeral' } })),
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a', cache_control: { type: 'ephemeral' } },
            { type: 'text', text: 'b', cache_control: { type: 'ephemeral' } },
          ],
        },
      ],
    };
    const toolUse = { type: 'tool_use', id: 'toolu_a', name: 'read', input: { path: 'x' } };
    const cases: Array<[string, unknown, number, string, string]> = [
      [
        'a missing field',
        { model: 'm', messages: USER_HELLO },
        400,
        'invalid_request_error',
        'max_tokens: Field required',
      ],
      [
        'no messages',
        { model: 'm', max_tokens: 10, messages: [] },
        400,
        'invalid_request_error',
        'messages: at least one message is required',
      ],
      [
        'an assistant first',
        { model: 'm', max_tokens: 10, messages: [{ role: 'assistant', content: 'hi' }] },
        400,
        'invalid_request_error',
        'messages: first message must use the "user" role',
      ],
      [
        'roles that do not alternate',
        {
          model: 'm',
          max_tokens: 10,
          messages: [
            { role: 'user', content: 'a' },
            { role: 'user', content: 'b' },
          ],
        },
        400,
        'invalid_request_error',
        'messages: roles must alternate between "user" and "assistant", but found multiple "user" roles in a row',
      ],
      [
        'a tool_result answering no tool_use of the previous turn',
        {
          model: 'm',
          max_tokens: 10,
          tools: [READ_TOOL],
          messages: [
            { role: 'user', content: 'a' },
            { role: 'assistant', content: [toolUse] },
            {
              role: 'user',
              content: [
                { type: 'tool_result', tool_use_id: 'toolu_a', content: 'ok' },
                { type: 'tool_result', tool_use_id: 'toolu_zzz', content: 'ok' },
              ],
            },
          ],
        },
        400,
        'invalid_request_error',
        'messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_zzz. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
      ],
      [
        'a tool_use left unanswered',
        {
          model: 'm',
          max_tokens: 10,
          tools: [READ_TOOL],
          messages: [
            { role: 'user', content: 'a' },
            { role: 'assistant', content: [toolUse] },
            { role: 'user', content: 'what now?' },
          ],
        },
        400,
        'invalid_request_error',
        'messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
      ],
      [
        'five cache breakpoints',
        tooManyBreakpoints,
        400,
        'invalid_request_error',
        'A maximum of 4 blocks with cache_control may be provided. Found 5.',
      ],
      [
        'duplicate tool names',
        { model: 'm', max_tokens: 10, tools: [READ_TOOL, READ_TOOL], messages: USER_HELLO },
        400,
        'invalid_request_error',
        'tools: Tool names must be unique.',
      ],
      [
        'a thinking block changed on its way back',
        {
          model: 'm',
          max_tokens: 10,
          messages: [
            { role: 'user', content: 'a' },
            {
              role: 'assistant',
              content: [
                { type: 'thinking', thinking: 'edited', signature: thinkingSignature('original') },
                { type: 'text', text: 'x' },
              ],
            },
            { role: 'user', content: 'b' },
          ],
        },
        400,
        'invalid_request_error',
        'messages.1.content.0: Invalid `signature` in `thinking` block',
      ],
      [
        'a body that is not JSON',
        '{"model": ',
        400,
        'invalid_request_error',
        'There was an issue with the request body: it is not valid JSON',
      ],
    ];

    it.each(cases)('rejects %s', async (_name, body, status, type, message) => {
      server.setScript([{ text: 'never answered' }]);
      const response = await post(body);
      expect(response.status).toBe(status);
      expect(response.json).toEqual({ type: 'error', error: { type, message }, request_id: response.requestId });
      expect(response.requestId).toMatch(/^req_/);
      expect(server.turnsServed).toBe(0);
      expect(server.scriptErrors).toEqual([]);
    });

    it('rejects missing or wrong keys, unknown paths and models, and oversized bodies', async () => {
      await server.stop();
      server = await startScriptedModelServer({ apiKey: 'right-key', models: ['known-model'], maxRequestBytes: 2000 });
      const valid = { model: 'known-model', max_tokens: 10, messages: USER_HELLO };
      const errorOf = (response: { status: number; json: unknown }) => [
        response.status,
        (response.json as { error: { type: string } }).error.type,
      ];
      expect(errorOf(await post(valid, { 'x-api-key': '' }))).toEqual([401, 'authentication_error']);
      expect(errorOf(await post(valid, { 'x-api-key': 'wrong' }))).toEqual([401, 'authentication_error']);
      expect(errorOf(await post({ ...valid, model: 'other' }, { 'x-api-key': 'right-key' }))).toEqual([
        404,
        'not_found_error',
      ]);
      expect(
        errorOf(
          await post(
            { ...valid, messages: [{ role: 'user', content: 'x'.repeat(3000) }] },
            { 'x-api-key': 'right-key' },
          ),
        ),
      ).toEqual([413, 'request_too_large']);
      const wrongPath = await fetch(`${server.url}/v1/complete`, {
        method: 'POST',
        headers: { 'x-api-key': 'right-key' },
        body: '{}',
      });
      expect(wrongPath.status).toBe(404);
      expect(server.requests.map((r) => r.status)).toEqual([401, 401, 404, 413, 404]);
    });
  });

  describe('scripts that go wrong', () => {
    it('fails loudly when the script runs out', async () => {
      server.setScript([{ text: 'only turn' }]);
      await client.messages.create({ model: 'm', max_tokens: 10, messages: USER_HELLO });
      server.assertScriptFinished();
      const error = await client.messages
        .create({ model: 'm', max_tokens: 10, messages: USER_HELLO })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ status: 400, type: 'invalid_request_error' });
      expect(server.scriptErrors).toEqual([
        {
          requestIndex: 1,
          turnIndex: null,
          message: 'turn 1: the script has no turn for this request: it ran out after 1 turns (it has 1 turns)',
        },
      ]);
      expect(() => server.assertScriptFinished()).toThrow(/ran out after 1 turns/);
    });

    it('fails loudly when a request is not what the turn expects, or calls a tool not offered', async () => {
      server.setScript([
        {
          label: 'asks for the file',
          expect: (request) => expect(request.lastUserText).toBe('read the file'),
          text: 'never',
        },
        { toolCalls: [{ name: 'bash', input: { command: 'ls' } }] },
      ]);
      await expect(client.messages.create({ model: 'm', max_tokens: 10, messages: USER_HELLO })).rejects.toMatchObject({
        status: 400,
      });
      await expect(
        client.messages.create({ model: 'm', max_tokens: 10, tools: [READ_TOOL], messages: USER_HELLO }),
      ).rejects.toMatchObject({ status: 400 });
      expect(server.scriptErrors.map((e) => e.message)).toEqual([
        expect.stringMatching(/^turn 0 \(asks for the file\): .*read the file/s),
        'turn 1: the turn calls tool "bash", but the request offers "read"',
      ]);
    });

    it('reports turns never requested', async () => {
      server.setScript([{ text: 'a' }, { text: 'b' }]);
      await client.messages.create({ model: 'm', max_tokens: 10, messages: USER_HELLO });
      expect(() => server.assertScriptFinished()).toThrow('1 of 2 scripted turns were never requested');
    });
  });

  describe('request log', () => {
    it('records every request and checks that each extends the previous one as an exact prefix', async () => {
      server.setScript([{ toolCalls: [{ name: 'read', input: { path: 'a' } }] }, { text: 'done' }]);
      const settings = scriptedSettings(server);
      const first = await sendMessagesRequest({
        client,
        settings,
        request: { tools: [READ_TOOL], messages: USER_HELLO },
      });
      const messages: MessageParam[] = [
        ...USER_HELLO,
        { role: 'assistant', content: first.message.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'contents of a' }] },
      ];
      await sendMessagesRequest({ client, settings, request: { tools: [READ_TOOL], messages } });

      expect(server.requests).toHaveLength(2);
      const [one, two] = server.requests;
      expect(one).toMatchObject({
        index: 0,
        method: 'POST',
        path: '/v1/messages',
        status: 200,
        streamed: true,
        turnIndex: 0,
        error: null,
      });
      expect(one!.headers['anthropic-version']).toBeDefined();
      expect(one!.messagesRequest?.messages).toHaveLength(1);
      expect(JSON.parse(one!.rawBody)).toEqual(one!.body);
      expect(two!.receivedAt).toBeGreaterThanOrEqual(one!.receivedAt);
      // The tail breakpoint moved from message 0 to message 2, and message 0 went from a block back to a string.
      expect(JSON.stringify((one!.body as { messages: unknown[] }).messages[0])).not.toEqual(
        JSON.stringify((two!.body as { messages: unknown[] }).messages[0]),
      );
      expect(() => assertRequestsExtendPrefix(server.requests)).not.toThrow();

      const edited = [{ role: 'user', content: 'hello!' }, ...messages.slice(1)];
      expect(prefixViolation(messages, edited)).toMatch(/^message 0 changed/);
      expect(prefixViolation(messages, messages.slice(0, 1))).toBe('it has 1 messages, fewer than the 3 before');
      await client.messages
        .create({ model: 'm', max_tokens: 10, messages: edited as MessageParam[] })
        .catch(() => undefined);
      expect(() => assertRequestsExtendPrefix(server.requests)).toThrow(
        /request 2 does not extend request 1 as an exact prefix: message 0 changed/,
      );
    });
  });

  describe('as a command', () => {
    it('parses its arguments', () => {
      expect(parseScriptedModelArgs(['--port', '8123', '--script', 's.json'])).toEqual({
        port: 8123,
        host: '127.0.0.1',
        scriptPath: 's.json',
        apiKey: undefined,
        minCacheableTokens: undefined,
      });
      expect(
        parseScriptedModelArgs(['--port=0', '--script=s.ts', '--min-cacheable-tokens', '2048', '--api-key', 'k']),
      ).toMatchObject({ port: 0, minCacheableTokens: 2048, apiKey: 'k' });
      expect(() => parseScriptedModelArgs(['--script', 's.json'])).toThrow('--port is required');
      expect(() => parseScriptedModelArgs(['--port', 'x', '--script', 's'])).toThrow('--port must be a whole number');
      expect(() => parseScriptedModelArgs(['--verbose'])).toThrow('unknown argument "--verbose"');
    });

    it('serves a JSON script from `npm run scripted-model`', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scripted-model-'));
      const scriptPath = path.join(dir, 'script.json');
      fs.writeFileSync(scriptPath, JSON.stringify([{ text: 'from the command' }]));
      const child = spawn(
        process.execPath,
        [require.resolve('tsx/cli'), 'scripted-model/cli.ts', '--port', '0', '--script', scriptPath],
        {
          cwd: path.resolve(__dirname, '../..'),
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      try {
        let output = '';
        const url = await new Promise<string>((resolve, reject) => {
          child.stdout.on('data', (chunk: Buffer) => {
            output += chunk.toString();
            const match = /listening on (http:\/\/\S+)/.exec(output);
            if (match) resolve(match[1]!);
          });
          child.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)));
        });
        const reply = await scriptedClient({ url }).messages.create({
          model: 'm',
          max_tokens: 10,
          messages: USER_HELLO,
        });
        expect(reply.content).toEqual([{ type: 'text', text: 'from the command' }]);
        const exitCode = new Promise<number | null>((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        expect(await exitCode).toBe(0);
        expect(output).toContain('served 1 requests, 1 scripted turns');
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
