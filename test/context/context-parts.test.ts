/**
 * The parts of context management that need no workflow: the prompt-too-long classification (through
 * the real SDK against the scripted server's window), the 1-hour cache-write split, context assembly
 * (clear batches, kept turns, a resumed paused turn, the rebuild from recorded steps), the token
 * economy's arithmetic, the model window table and the CLI's new commands.
 */
import { ApplicationFailure } from '@temporalio/common';
import {
  assembleContext,
  emptyContext,
  turnsToKeep,
  withClearedResults,
  withReply,
} from '../../activities/brain/context-assembly';
import { countCacheBreakpoints, placeCacheBreakpoints } from '../../activities/model/cache-breakpoints';
import { sendMessagesRequest } from '../../activities/model/messages-request';
import { parseAgentArgs } from '../../cli/args';
import { growingContextEstimate } from '../../client/token-report';
import type { CompactContextInput, CompactContextResult } from '../../common/context';
import type { ModelStepInput, ModelStepResult } from '../../common/model-step';
import { MODEL_FAILURE_TYPES, type AssistantMessage } from '../../common/model-types';
import { contextWindowOf } from '../../common/models';
import { parseOperationInput } from '../../common/operation';
import type { RecordedStep } from '../../common/recorded-steps';
import { newTokenLedger, ledgerModelRequest, ledgerToolResult, tokenEconomy } from '../../common/token-ledger';
import { startScriptedModelServer } from '../../scripted-model/server';
import { READ_TOOL, scriptedClient, scriptedSettings } from '../support/model-fixtures';

const reply = (id: string, content: AssistantMessage['content']): Pick<ModelStepResult, 'message'> => ({
  message: {
    id,
    type: 'message',
    role: 'assistant',
    model: 'm',
    content,
    stop_reason: 'end_turn',
    stop_sequence: null,
  },
});
// A block as the accumulator builds it (the SDK's response type has fields a request leaves out).
const call = (id: string) =>
  ({ type: 'tool_use', id, name: 'bash', input: { command: 'ls' } }) as unknown as AssistantMessage['content'][number];

describe('context parts', () => {
  it('classifies the API’s prompt-too-long 400 as ModelPromptTooLong, with the 1-hour write split kept', async () => {
    const server = await startScriptedModelServer({ script: [{ text: 'ok' }], contextWindowTokens: 10 });
    try {
      const failure = await sendMessagesRequest({
        client: scriptedClient(server),
        settings: scriptedSettings(server),
        request: { messages: [{ role: 'user', content: 'x'.repeat(400) }] },
      }).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect((failure as ApplicationFailure).type).toBe(MODEL_FAILURE_TYPES.promptTooLong);
      expect((failure as ApplicationFailure).nonRetryable).toBe(true);
      expect((failure as ApplicationFailure).message).toMatch(
        /^the prompt does not fit the model's context window \(400\): compact the conversation: prompt is too long: 100 tokens > 10 maximum/,
      );
    } finally {
      await server.stop();
    }
    const cached = await startScriptedModelServer({ script: [{ text: 'ok' }], minCacheableTokens: 1 });
    try {
      const answer = await sendMessagesRequest({
        client: scriptedClient(cached),
        settings: scriptedSettings(cached),
        request: { messages: [{ role: 'user', content: 'y'.repeat(400) }], promptCache: { ttl: '1h' } },
      });
      expect(answer.usage).toEqual({ input: 0, cacheWrite: 100, cacheWrite1h: 100, cacheRead: 0, output: 1 });
    } finally {
      await cached.stop();
    }
  });

  it('clears tool results into stubs that keep the output path, and keeps whole turns', () => {
    let context = emptyContext('system');
    context = withReply(context, [{ type: 'text', text: 'goal' }], reply('m1', [call('t1')]));
    const big = 'x'.repeat(20_000);
    context = withReply(context, [{ type: 'tool_result', tool_use_id: 't1', content: big }], reply('m2', [call('t2')]));
    context = withReply(
      context,
      [
        {
          type: 'tool_result',
          tool_use_id: 't2',
          content: 'head\n[output truncated: … Full output: /workspace/.agent/out/t2.txt; read…]',
        },
      ],
      reply('m3', [{ type: 'text', text: 'done', citations: null }]),
    );
    const cleared = withClearedResults(context, { batch: 1, toolUseIds: ['t1', 't2'] });
    expect(cleared.edits).toBe(1);
    expect(cleared.messages[2]!.content).toEqual([
      {
        type: 'tool_result',
        tool_use_id: 't1',
        content: '[cleared: 20 KB of bash output, read /workspace/.agent/out/t1.txt (read_file) if you need it again]',
      },
    ]);
    expect(JSON.stringify(cleared.messages[4])).toContain('read /workspace/.agent/out/t2.txt (read_file)');
    expect(context.messages[2]!.content).not.toEqual(cleared.messages[2]!.content); // the original is untouched

    expect(turnsToKeep(context, 1)).toEqual({ retained: [context.messages[5]], replaced: 5 });
    expect(turnsToKeep(context, 2)).toEqual({ retained: context.messages.slice(3), replaced: 3 });
    expect(turnsToKeep(context, 3)).toBeNull(); // only the first message would be replaced
  });

  it('puts a fourth cache breakpoint just before the edit frontier', () => {
    const messages = [
      { role: 'user' as const, content: [{ type: 'text' as const, text: 'goal' }] },
      { role: 'assistant' as const, content: [{ type: 'tool_use' as const, id: 't1', name: 'bash', input: {} }] },
      { role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: 't1', content: 'r1' }] },
      { role: 'assistant' as const, content: [{ type: 'tool_use' as const, id: 't2', name: 'bash', input: {} }] },
      { role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: 't2', content: 'r2' }] },
    ];
    const params = placeCacheBreakpoints({ system: 'sys', tools: [READ_TOOL], messages }, '5m', 't1');
    expect(countCacheBreakpoints(params)).toBe(4);
    expect(params.messages[1]!.content).toEqual([
      { type: 'tool_use', id: 't1', name: 'bash', input: {}, cache_control: { type: 'ephemeral' } },
    ]);
    // A frontier in the tail's message, or one that is not in the request, adds nothing twice.
    expect(countCacheBreakpoints(placeCacheBreakpoints({ messages }, '5m', 'gone'))).toBe(1);
  });

  it('marks where a clear batch starts as well as the new frontier, in place of the tools', () => {
    const turn = (n: number) => [
      { role: 'assistant' as const, content: [{ type: 'tool_use' as const, id: `t${n}`, name: 'bash', input: {} }] },
      { role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: `t${n}`, content: `r${n}` }] },
    ];
    const messages = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'goal' }] }, ...turn(1)];
    messages.push(...turn(2), ...turn(3), ...turn(4));
    const marked = (index: number) => (params: ReturnType<typeof placeCacheBreakpoints>) =>
      (params.messages[index]!.content as Array<{ cache_control?: unknown }>)[0]!.cache_control;
    // The request that clears t1 and t2: the cached prefix ends before t1 (read back there), the
    // next batch starts at t3 (written there), the tail; the system prompt's mark covers the tools.
    const params = placeCacheBreakpoints({ system: 'sys', tools: [READ_TOOL], messages }, '5m', 't3', 't1');
    expect(countCacheBreakpoints(params)).toBe(4);
    expect(params.tools![0]).not.toHaveProperty('cache_control');
    expect(params.system).toEqual([{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral' } }]);
    expect(marked(1)(params)).toEqual({ type: 'ephemeral' });
    expect(marked(5)(params)).toEqual({ type: 'ephemeral' });
    expect(marked(8)(params)).toEqual({ type: 'ephemeral' });
    // Without a system prompt the tools keep their mark: still four.
    const noSystem = placeCacheBreakpoints({ tools: [READ_TOOL], messages }, '5m', 't3', 't1');
    expect(countCacheBreakpoints(noSystem)).toBe(4);
    // A batch start that is not in the request changes nothing.
    const gone = placeCacheBreakpoints({ system: 'sys', tools: [READ_TOOL], messages }, '5m', 't3', 'gone');
    expect(gone.tools![0]).toHaveProperty('cache_control');
    expect(countCacheBreakpoints(gone)).toBe(4);
  });

  it('joins a resumed paused turn to the paused message', () => {
    let context = withReply(
      emptyContext('s'),
      [{ type: 'text', text: 'go' }],
      reply('m1', [{ type: 'text', text: 'part 1', citations: null }]),
    );
    context = withReply(context, [], reply('m2', [{ type: 'text', text: 'part 2', citations: null }]));
    expect(context.messages).toHaveLength(2);
    expect(context.messages[1]!.content).toHaveLength(2);
    expect(context.lastReplyId).toBe('m2');
  });

  it('assembles a context from recorded steps starting at the latest compaction', () => {
    const model = (
      turn: number,
      tail: ModelStepInput['tail'],
      id: string,
      extra: Partial<ModelStepInput> = {},
    ): RecordedStep => ({
      kind: 'model',
      scheduledEventId: turn,
      activityId: String(turn),
      pending: false,
      input: {
        operationId: 'op',
        lane: 'main',
        turn,
        maxTokens: 10,
        base: { messages: 0, lastReplyId: null },
        tail,
        ...extra,
      },
      result: {
        ...reply(id, [call(`c${turn}`)]),
        stopReason: 'tool_use',
        usage: { input: 1, cacheWrite: 0, cacheRead: 0, output: 1 },
        requestId: null,
        rebuilt: false,
      },
    });
    const result = (turn: number) => [{ type: 'tool_result' as const, tool_use_id: `c${turn}`, content: `r${turn}` }];
    const compactionInput: CompactContextInput = {
      operationId: 'op',
      lane: 'main',
      turn: 2,
      compaction: 1,
      reason: 'manual',
      base: { messages: 4, lastReplyId: 'a2' },
      tail: result(2),
      keepTurns: 1,
      goal: 'the goal',
      summaryMaxTokens: 100,
      reduced: false,
      fitTokens: 1000,
    };
    const compactionResult = {
      summary: 'what happened',
      truncated: false,
      system: 'sys',
      retained: [{ role: 'assistant', content: [call('c2')] }],
      replacedMessages: 3,
      context: { messages: 2, lastReplyId: 'a2', compactions: 1, edits: 0 },
      tokensBefore: 100,
      tokensAfter: 20,
      usage: { input: 1, cacheWrite: 0, cacheRead: 0, output: 1 },
      requestId: null,
      replyId: 'sum',
      model: 'm',
      stopReason: 'end_turn',
      rebuilt: false,
    } as CompactContextResult;
    const steps: RecordedStep[] = [
      model(1, [{ type: 'text', text: 'goal' }], 'a1', { system: 'sys' }),
      model(2, result(1), 'a2'),
      {
        kind: 'compaction',
        scheduledEventId: 9,
        activityId: 'compaction-1',
        pending: false,
        input: compactionInput,
        result: compactionResult,
      },
      model(3, result(2), 'a3'),
    ];
    const context = assembleContext(steps);
    expect(context.system).toBe('sys');
    expect(context.compactions).toBe(1);
    expect(context.lastReplyId).toBe('a3');
    expect(context.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(JSON.stringify(context.messages[0])).toContain(
      '## Goal\\nthe goal\\n\\n## Summary of the work so far\\nwhat happened',
    );
    // Without the compaction: everything from the start.
    expect(assembleContext(steps.slice(0, 2)).messages).toHaveLength(4);
  });

  it('prices the ledger: cache savings exactly, avoided tokens at the run’s average prompt price', () => {
    const ledger = newTokenLedger();
    ledgerToolResult(ledger, 1000);
    const usage = { input: 100, cacheWrite: 1000, cacheWrite1h: 400, cacheRead: 9000, output: 50 };
    ledgerModelRequest(ledger, usage, { batch: false, firstAfterCompaction: false });
    const economy = tokenEconomy(usage, ledger, 'claude-sonnet-4-6', 200_000);
    // Prompt: 100 + 600×1.25 + 400×2 + 9000×0.1 = 2550 input-token equivalents at $3/M.
    expect(economy.costUsd).toBeCloseTo((2550 * 3 + 50 * 15) / 1e6, 12);
    expect(economy.saved.promptCaching.usd).toBeCloseTo(((10_100 - 2550) * 3) / 1e6, 12);
    expect(economy.cacheHitRate).toBeCloseTo(9000 / 10_100, 12);
    expect(economy.peakContextPct).toBeCloseTo(100 * (10_100 / 200_000), 12);
    expect(economy.saved.outputSpill.tokens).toBe(1000);
    expect(economy.saved.outputSpill.grossUsd).toBeCloseTo(1000 * ((2550 * 3) / 1e6 / 10_100), 12);
    expect([economy.cacheWrite5m, economy.cacheWrite1h]).toEqual([600, 400]);
  });

  it('estimates what the same turns cost in one growing conversation (what resuming does)', () => {
    const step = (
      turn: number,
      tail: ModelStepInput['tail'],
      usage: { cacheWrite: number; cacheRead: number; output: number },
    ): RecordedStep => ({
      kind: 'model',
      scheduledEventId: turn,
      activityId: String(turn),
      pending: false,
      input: { operationId: 'op', lane: 'main', turn, maxTokens: 10, base: { messages: 0, lastReplyId: null }, tail },
      result: {
        ...reply(`a${turn}`, [call(`c${turn}`)]),
        stopReason: 'tool_use',
        usage: { input: 0, ...usage },
        requestId: null,
        rebuilt: false,
      },
    });
    const text = (chars: number) => [{ type: 'text' as const, text: 'g'.repeat(chars) }];
    const toolResult = (chars: number) => [
      { type: 'tool_result' as const, tool_use_id: 'c', content: 'r'.repeat(chars) },
    ];
    const steps: RecordedStep[] = [
      // The first request as it was sent: 1,000 tokens.
      step(1, text(400), { cacheWrite: 1000, cacheRead: 0, output: 100 }),
      // Compacted and cleared in the run (a small prompt); growing: 1,000 + 100 (reply) + 200 (result).
      step(2, toolResult(800), { cacheWrite: 100, cacheRead: 200, output: 50 }),
      // A second operation's first request: its goal (100 tokens) follows the conversation.
      step(3, text(400), { cacheWrite: 300, cacheRead: 0, output: 10 }),
    ];
    steps.splice(2, 0, { ...steps[1]!, kind: 'compaction' } as unknown as RecordedStep);
    const estimate = growingContextEstimate(steps, 'claude-sonnet-4-6');
    expect(estimate).toMatchObject({
      requests: 3,
      promptTokens: 1000 + 1300 + 1450,
      cacheWrite: 1000 + 300 + 150,
      cacheRead: 1000 + 1300,
      output: 160,
      finalTokens: 1450,
    });
    // Writes at 1.25×, reads at 0.1× of $3/M, output at $15/M.
    expect(estimate.costUsd).toBeCloseTo(((1450 * 1.25 + 2300 * 0.1) * 3 + 160 * 15) / 1e6, 12);
    expect(growingContextEstimate([], null)).toMatchObject({ requests: 0, costUsd: 0 });
  });

  it('knows the models’ windows and validates the context policy', () => {
    expect(contextWindowOf('claude-sonnet-4-6')).toBe(200_000);
    expect(contextWindowOf('some-local-model')).toBe(200_000);
    const parsed = parseOperationInput({ goal: 'g' });
    expect(parsed.ok && parsed.value.context).toEqual({
      compactAtPct: 70,
      keepTurns: 2,
      summaryMaxTokens: 4096,
      compaction: true,
      editing: { enabled: true, atPct: 65, keepTurns: 4 },
      maxContinuations: 5,
    });
    expect(parseOperationInput({ goal: 'g', context: { compactAtPct: 5 } })).toEqual({
      ok: false,
      error: 'context.compactAtPct: must be between 10 and 95 (percent of the context window)',
    });
    expect(parseOperationInput({ goal: 'g', budget: { maxCostUsd: -1 } })).toEqual({
      ok: false,
      error: 'budget.maxCostUsd: must be positive',
    });
  });

  it('parses agent report and agent compact', () => {
    expect(parseAgentArgs(['report', 'op-1', '--json'])).toEqual({
      kind: 'report',
      id: 'op-1',
      json: true,
      steps: false,
    });
    expect(parseAgentArgs(['compact', 'op-1', '--reason', 'new phase'])).toEqual({
      kind: 'compact',
      id: 'op-1',
      reason: 'new phase',
    });
    expect(() => parseAgentArgs(['report'])).toThrow('agent report: missing task, operation or session id');
  });
});
