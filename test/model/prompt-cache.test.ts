/**
 * Prompt caching end to end: where the harness puts breakpoints, how the scripted server's cache
 * simulation answers them, and the usage of a 10-turn conversation checked against figures worked
 * out by hand.
 */
import type { MessageParam, Tool } from '@anthropic-ai/sdk/resources/messages';
import { addUsage, ModelRequest, TokenUsage, ZERO_USAGE } from '../../common/model-types';
import {
  countCacheBreakpoints,
  placeCacheBreakpoints,
  stripCacheBreakpoints,
} from '../../activities/model/cache-breakpoints';
import { buildMessagesParams, sendMessagesRequest } from '../../activities/model/messages-request';
import { cacheWriteRows } from '../../bench/cache-writes';
import { PromptCacheSimulation } from '../../scripted-model/cache-simulation';
import { assertRequestsExtendPrefix } from '../../scripted-model/prefix';
import type { PromptBlock } from '../../scripted-model/prompt';
import type { ScriptedTurn } from '../../scripted-model/script';
import { startScriptedModelServer } from '../../scripted-model/server';
import { scriptedClient, scriptedSettings } from '../support/model-fixtures';

const EPHEMERAL = { type: 'ephemeral' };

describe('cache breakpoints placed by the harness', () => {
  const tools: Tool[] = [
    { name: 'read', input_schema: { type: 'object' } },
    { name: 'bash', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' } },
  ];

  it('marks the last tool, the system prompt and the tail of the conversation', () => {
    const params = placeCacheBreakpoints(
      { tools, system: 'You are helpful.', messages: [{ role: 'user', content: 'hi' }] },
      '5m',
    );
    expect(params.tools).toEqual([
      { name: 'read', input_schema: { type: 'object' } },
      { name: 'bash', input_schema: { type: 'object' }, cache_control: EPHEMERAL },
    ]);
    expect(params.system).toEqual([{ type: 'text', text: 'You are helpful.', cache_control: EPHEMERAL }]);
    expect(params.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: EPHEMERAL }] },
    ]);
    expect(countCacheBreakpoints(params)).toBe(3);
  });

  it('moves the tail mark instead of piling marks up, and never exceeds 4', () => {
    const marked = (text: string) => ({ type: 'text' as const, text, cache_control: { type: 'ephemeral' as const } });
    const messages: MessageParam[] = [
      { role: 'user', content: [marked('one'), marked('two')] },
      { role: 'assistant', content: [marked('three')] },
      { role: 'user', content: [marked('four'), { type: 'text', text: 'five' }] },
    ];
    const system = [marked('a'), marked('b')];
    const params = placeCacheBreakpoints({ tools, system, messages, cache_control: { type: 'ephemeral' } }, '1h');
    expect(countCacheBreakpoints(params)).toBe(3);
    expect(params.cache_control).toBeUndefined();
    expect(params.system).toEqual([
      { type: 'text', text: 'a' },
      { type: 'text', text: 'b', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
    expect(params.messages.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'four' },
        { type: 'text', text: 'five', cache_control: { type: 'ephemeral', ttl: '1h' } },
      ],
    });
    // The input is left as it was.
    expect(countCacheBreakpoints({ tools, system, messages, cache_control: { type: 'ephemeral' } })).toBe(8);
  });

  it('skips blocks that cannot carry a mark, and can send none at all', () => {
    const messages: MessageParam[] = [
      { role: 'user', content: 'question' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'partial answer' },
          { type: 'thinking', thinking: 'hmm', signature: 's' },
        ],
      },
    ];
    const params = placeCacheBreakpoints({ messages }, '5m');
    expect(params.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'partial answer', cache_control: EPHEMERAL },
        { type: 'thinking', thinking: 'hmm', signature: 's' },
      ],
    });
    const request: ModelRequest = { system: 'sys', tools, messages, promptCache: false };
    expect(
      countCacheBreakpoints(buildMessagesParams(request, { model: 'm', maxTokens: 10, promptCacheTtl: '5m' })),
    ).toBe(0);
    expect(countCacheBreakpoints(stripCacheBreakpoints({ tools, messages }))).toBe(0);
  });
});

describe('prompt cache simulation', () => {
  const block = (key: string, tokens: number, ttl?: '5m' | '1h'): PromptBlock => ({
    key,
    tokens,
    ...(ttl ? { breakpoint: { ttl } } : {}),
  });

  it('expires entries after their TTL on the injected clock', () => {
    let now = 0;
    const cache = new PromptCacheSimulation({ clock: () => now, minCacheableTokens: 100 });
    const prompt = [block('a', 100), block('b', 50, '5m')];
    expect(cache.process(prompt)).toMatchObject({
      input_tokens: 0,
      cache_creation_input_tokens: 150,
      cache_read_input_tokens: 0,
    });
    now = 4 * 60_000;
    expect(cache.process(prompt)).toMatchObject({
      input_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 150,
    });
    now += 4 * 60_000; // 8 min: alive, because the read at 4 min refreshed it
    expect(cache.process(prompt).cache_read_input_tokens).toBe(150);
    now += 5 * 60_000 + 1;
    expect(cache.process(prompt)).toMatchObject({ cache_creation_input_tokens: 150, cache_read_input_tokens: 0 });

    const long = [block('a', 100), block('c', 50, '1h')];
    expect(cache.process(long)).toMatchObject({
      cache_creation_input_tokens: 150,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 150 },
    });
    now += 50 * 60_000;
    expect(cache.process(long).cache_read_input_tokens).toBe(150);
  });

  it('caches nothing below the minimum length', () => {
    const cache = new PromptCacheSimulation({ clock: () => 0 });
    // Default minimum 1024: the first breakpoint (1000) is too short, the second (1024) is written.
    expect(cache.process([block('a', 1000, '5m'), block('b', 24, '5m')])).toMatchObject({
      input_tokens: 0,
      cache_creation_input_tokens: 1024,
    });
    const short = [block('x', 1023, '5m')];
    expect(cache.process(short)).toMatchObject({
      input_tokens: 1023,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
    expect(cache.process(short)).toMatchObject({ input_tokens: 1023, cache_read_input_tokens: 0 });
  });

  it('keeps a cache per model, and says how much of a prompt was sent before', () => {
    const cache = new PromptCacheSimulation({ clock: () => 0, minCacheableTokens: 1 });
    const prompt = [block('tools', 100, '5m'), block('m0', 50), block('m1', 50, '5m')];
    expect(cache.processDetailed(prompt, 'model-a')).toEqual({
      usage: expect.objectContaining({ cache_creation_input_tokens: 200, cache_read_input_tokens: 0 }),
      detail: { seenTokens: 0 },
    });
    // Another model reads nothing of it: its cache is its own (a switch writes the whole prefix again).
    expect(cache.processDetailed(prompt, 'model-b')).toEqual({
      usage: expect.objectContaining({ cache_creation_input_tokens: 200, cache_read_input_tokens: 0 }),
      detail: { seenTokens: 0 },
    });
    // A longer prompt on the first model: 150 tokens sent before, all of it read back.
    const longer = [block('tools', 100, '5m'), block('m0', 50), block('m1', 50), block('m2', 30, '5m')];
    expect(cache.processDetailed(longer, 'model-a')).toEqual({
      usage: expect.objectContaining({ cache_creation_input_tokens: 30, cache_read_input_tokens: 200 }),
      detail: { seenTokens: 200 },
    });
    // Without breakpoints nothing is read, but the server knows it was all sent before.
    const unmarked = longer.map(({ key, tokens }) => ({ key, tokens }));
    expect(cache.processDetailed(unmarked, 'model-a').detail).toEqual({ seenTokens: 230 });
    cache.clear();
    expect(cache.processDetailed(unmarked, 'model-a').detail).toEqual({ seenTokens: 0 });
  });

  it('looks back 20 blocks from each breakpoint for a hit', () => {
    const cache = new PromptCacheSimulation({ clock: () => 0, minCacheableTokens: 1 });
    const base = Array.from({ length: 5 }, (_, i) => block(`m${i}`, 10));
    cache.process([...base.slice(0, 4), block('m4', 10, '5m')]);
    const grown = (extra: number) => [
      ...base,
      ...Array.from({ length: extra }, (_, i) => block(`n${i}`, 1)),
      block('tail', 1, '5m'),
    ];
    // Tail at index 5 + 19 = 24: the entry at index 4 is the 21st block back, out of reach.
    expect(cache.process(grown(19)).cache_read_input_tokens).toBe(0);
    cache.clear();
    cache.process([...base.slice(0, 4), block('m4', 10, '5m')]);
    // Tail at index 5 + 18 = 23: index 4 is 20 blocks back counting the tail, a hit.
    expect(cache.process(grown(18))).toMatchObject({ cache_read_input_tokens: 50, cache_creation_input_tokens: 19 });
  });
});

describe('usage over a 10-turn scripted conversation', () => {
  it('matches the hand-computed figures', async () => {
    // Token sizes (1 token per started 4 characters):
    //   tool `read`: "read" + description (379 chars) + `{"type":"object"}` = 400 chars = 100
    //   system: 4000 chars = 1000        first user message: 400 chars = 100
    //   each tool call: "read" + `{"path":"<25 chars>"}` = 40 chars = 10 (output)
    //   each tool result: 800 chars = 200   final answer "done" = 1 (output)
    // Breakpoints: tools (100, under the 1024 minimum: never written), system (1100), tail.
    // The prompt of request k is 1200 + 210 (k - 1).
    const tool: Tool = { name: 'read', description: 'd'.repeat(379), input_schema: { type: 'object' } };
    const system = 's'.repeat(4000);
    const pathFor = (k: number) => String(k).padStart(25, 'p');
    const turns: ScriptedTurn[] = [];
    for (let k = 1; k <= 9; k++) turns.push({ toolCalls: [{ name: 'read', input: { path: pathFor(k) } }] });
    turns.push({ text: 'done' });

    let now = 1_000_000;
    const server = await startScriptedModelServer({ script: turns, clock: () => now });
    try {
      const client = scriptedClient(server);
      const settings = scriptedSettings(server);
      const messages: MessageParam[] = [{ role: 'user', content: 'u'.repeat(400) }];
      const usages: TokenUsage[] = [];
      for (let k = 1; k <= 10; k++) {
        if (k === 6) now += 6 * 60_000; // a pause longer than the 5-minute TTL: everything expires
        now += 1000;
        const reply = await sendMessagesRequest({
          client,
          settings,
          // Request 8 goes out without breakpoints: nothing is read or written.
          request: { system, tools: [tool], messages, promptCache: k === 8 ? false : undefined },
        });
        usages.push(reply.usage);
        messages.push({ role: 'assistant', content: reply.message.content });
        const call = reply.message.content[0];
        if (call?.type === 'tool_use')
          messages.push({
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: call.id, content: 'r'.repeat(800) }],
          });
      }

      const u = (input: number, cacheWrite: number, cacheRead: number, output: number): TokenUsage => ({
        input,
        cacheWrite,
        cacheRead,
        output,
      });
      expect(usages).toEqual([
        u(0, 1200, 0, 10), //    1: cold: writes system (1100) and tail (1200)
        u(0, 210, 1200, 10), //  2: reads request 1's tail, writes the new turn
        u(0, 210, 1410, 10), //  3
        u(0, 210, 1620, 10), //  4
        u(0, 210, 1830, 10), //  5
        u(0, 2250, 0, 10), //    6: after the pause nothing is left: rewrites all 2250
        u(0, 210, 2250, 10), //  7
        u(2670, 0, 0, 10), //    8: no breakpoints: all 2670 uncached
        u(0, 420, 2460, 10), //  9: request 7's tail is 4 blocks back (within 20): reads 2460, writes 2 turns
        u(0, 210, 2880, 1), //  10: final answer
      ]);
      expect(usages.reduce(addUsage, ZERO_USAGE)).toEqual(u(2670, 5130, 13650, 91));
      // Every prompt is accounted for exactly once: 21450 = sum of 1200 + 210 (k - 1) for k = 1..10.
      expect(2670 + 5130 + 13650).toBe(21450);

      // Where each prompt's tokens not read came from (the bench's miss table): the new tail (210 a
      // turn: the reply and the tool result), the first request's tools and system prompt, and what
      // was sent before but not read (request 6 after the pause, 8 without breakpoints, and 9, whose
      // breakpoint found request 7's tail but not request 8's).
      expect(cacheWriteRows(server.requests).map((row) => [row.tail, row.start, row.missed, row.changed])).toEqual([
        [100, 1100, 0, 0],
        [210, 0, 0, 0],
        [210, 0, 0, 0],
        [210, 0, 0, 0],
        [210, 0, 0, 0],
        [210, 0, 2040, 0],
        [210, 0, 0, 0],
        [210, 0, 2460, 0],
        [210, 0, 210, 0],
        [210, 0, 0, 0],
      ]);

      server.assertScriptFinished();
      assertRequestsExtendPrefix(server.requests);
      expect(server.requests.every((request) => countBody(request.body) <= 4)).toBe(true);
    } finally {
      await server.stop();
    }
  });
});

function countBody(body: unknown): number {
  return countCacheBreakpoints(body as Parameters<typeof countCacheBreakpoints>[0]);
}
