/**
 * The lane's chain of operations as the brain rebuilds it from recorded steps alone: back through
 * the operations a lane's context spans, only as far as the latest completed compaction, each
 * predecessor cut where the context it handed on ends (after its compactions and clear batches), and
 * the assembled context the same as the one the operations built step by step.
 */
import { ApplicationFailure } from '@temporalio/common';
import { assembleContext } from '../../activities/brain/context-assembly';
import { laneChainSteps } from '../../activities/brain/lane-chain';
import type { CompactContextInput, CompactContextResult, ContextClear } from '../../common/context';
import type { ModelStepInput, ModelStepResult } from '../../common/model-step';
import type { ContextFingerprint, TailBlock } from '../../common/context-fingerprint';
import { ZERO_USAGE, type AssistantMessage } from '../../common/model-types';
import type { RecordedStep } from '../../common/recorded-steps';

let scheduled = 0;
const common = () => ({ scheduledEventId: ++scheduled, activityId: `a${scheduled}`, pending: false });

function modelStep(
  operationId: string,
  base: ContextFingerprint,
  tail: TailBlock[],
  replyId: string,
  options: { continues?: string; clear?: ContextClear; system?: string; content?: AssistantMessage['content'] } = {},
): RecordedStep {
  const input: ModelStepInput = {
    operationId,
    lane: 'main',
    turn: 1,
    maxTokens: 100,
    base,
    tail,
    ...(options.system !== undefined ? { system: options.system } : {}),
    ...(options.clear ? { clear: options.clear } : {}),
    ...(options.continues ? { continues: options.continues } : {}),
  };
  const result = {
    message: {
      id: replyId,
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: options.content ?? [{ type: 'text', text: `reply ${replyId}`, citations: null }],
      stop_reason: 'end_turn',
      stop_sequence: null,
    },
    stopReason: 'end_turn',
    usage: ZERO_USAGE,
    requestId: null,
    rebuilt: false,
  } as unknown as ModelStepResult;
  return { ...common(), kind: 'model', input, result };
}

function compaction(
  operationId: string,
  base: Required<ContextFingerprint>,
  number: number,
  retained: CompactContextResult['retained'],
  options: { continues?: string } = {},
): RecordedStep {
  const input: CompactContextInput = {
    operationId,
    lane: 'main',
    turn: 1,
    compaction: number,
    reason: 'manual',
    base,
    tail: [],
    keepTurns: 1,
    goal: 'the goal',
    summaryMaxTokens: 1000,
    reduced: false,
    fitTokens: 1000,
    ...(options.continues ? { continues: options.continues } : {}),
  };
  const result: CompactContextResult = {
    summary: `summary ${number}`,
    truncated: false,
    system: 'sys',
    retained,
    replacedMessages: base.messages - retained.length,
    context: { messages: 1 + retained.length, lastReplyId: base.lastReplyId, compactions: number, edits: base.edits },
    tokensBefore: 0,
    tokensAfter: 0,
    usage: ZERO_USAGE,
    requestId: null,
    replyId: `summary-${number}`,
    model: 'm',
    stopReason: 'end_turn',
    rebuilt: false,
  };
  return { ...common(), kind: 'compaction', input, result };
}

const text = (t: string): TailBlock[] => [{ type: 'text', text: t }];
const fp = (messages: number, lastReplyId: string | null, compactions = 0, edits = 0) => ({
  messages,
  lastReplyId,
  compactions,
  edits,
});
const toolUse = (id: string) =>
  ({ type: 'tool_use', id, name: 'bash', input: { command: 'ls' } }) as unknown as AssistantMessage['content'][number];
const toolResult = (id: string): TailBlock[] => [{ type: 'tool_result', tool_use_id: id, content: 'x'.repeat(2000) }];

describe('the lane chain of operations', () => {
  const reader = (histories: Record<string, RecordedStep[]>) => {
    const read: string[] = [];
    return {
      read,
      fn: async (operationId: string) => {
        read.push(operationId);
        const steps = histories[operationId];
        if (!steps) throw new Error(`no history for ${operationId}`);
        return steps;
      },
    };
  };

  it('walks back through every operation when none compacted, cutting a step recorded after the hand-over', async () => {
    const a = [
      modelStep('A', fp(0, null), text('goal A'), 'a1', { system: 'sys' }),
      modelStep('A', fp(2, 'a1'), text('more A'), 'a2'),
      // Completed after A stopped listening (e.g. cancelled by an abort): not part of the lane.
      modelStep('A', fp(4, 'a2'), text('late A'), 'a3'),
    ];
    const b = [modelStep('B', fp(4, 'a2'), text('goal B'), 'b1', { continues: 'A' })];
    const c = [modelStep('C', fp(6, 'b1'), text('goal C'), 'c1', { continues: 'B' })];
    const { read, fn } = reader({ A: a, B: b });
    const steps = await laneChainSteps(fn, c);
    expect(read).toEqual(['B', 'A']);
    expect(steps.map((s) => s.result && 'message' in s.result && s.result.message.id)).toEqual([
      'a1',
      'a2',
      'b1',
      'c1',
    ]);
    const context = assembleContext(steps);
    expect(context.system).toBe('sys');
    expect(context.messages).toHaveLength(8);
    expect(context.lastReplyId).toBe('c1');
  });

  it('stops at the latest compaction and continues the compacted, cleared context', async () => {
    const a = [
      modelStep('A', fp(0, null), text('goal A'), 'a1', { system: 'sys', content: [toolUse('t1')] }),
      modelStep('A', fp(2, 'a1'), toolResult('t1'), 'a2', { content: [toolUse('t2')] }),
      modelStep('A', fp(4, 'a2'), toolResult('t2'), 'a3'),
    ];
    const b = [
      // B's first step: a compaction of A's context (B's prompt needed room), then a model step.
      compaction('B', fp(6, 'a3'), 1, [{ role: 'assistant', content: [{ type: 'text', text: 'reply a3' }] }], {
        continues: 'A',
      }),
      modelStep('B', fp(2, 'a3', 1), text('goal B'), 'b1', { content: [toolUse('t3')] }),
      modelStep('B', fp(4, 'b1', 1), toolResult('t3'), 'b2'),
    ];
    // C continues B's context after a clear batch of B's: it must not read A at all.
    const c = [
      modelStep('C', fp(6, 'b2', 1, 0), text('goal C'), 'c1', {
        continues: 'B',
        clear: { batch: 1, toolUseIds: ['t3'] },
      }),
      modelStep('C', fp(8, 'c1', 1, 1), text('more C'), 'c2'),
    ];
    const { read, fn } = reader({ A: a, B: b });
    const steps = await laneChainSteps(fn, c);
    expect(read).toEqual(['B']);
    expect(steps[0]!.kind).toBe('compaction');
    const context = assembleContext(steps);
    expect(context).toMatchObject({ lastReplyId: 'c2', compactions: 1, edits: 1 });
    expect(context.messages).toHaveLength(10);
    expect(JSON.stringify(context.messages[0])).toContain('summary 1');
    // B's tool result, cleared by C's batch.
    expect(JSON.stringify(context.messages[4])).toContain('[cleared:');
  });

  it("continues a predecessor's context that ends with its compaction", async () => {
    const a = [
      modelStep('A', fp(0, null), text('goal A'), 'a1', { system: 'sys' }),
      modelStep('A', fp(2, 'a1'), text('more A'), 'a2'),
      modelStep('A', fp(4, 'a2'), text('again A'), 'a3'),
      compaction('A', fp(6, 'a3'), 1, [{ role: 'assistant', content: [{ type: 'text', text: 'reply a3' }] }]),
    ];
    const b = [modelStep('B', fp(2, 'a3', 1), text('goal B'), 'b1', { continues: 'A' })];
    const { fn } = reader({ A: a });
    const context = assembleContext(await laneChainSteps(fn, b));
    expect(context).toMatchObject({ lastReplyId: 'b1', compactions: 1 });
    expect(context.messages).toHaveLength(4);
  });

  it('names the operation and the context it cannot find, and a chain that loops', async () => {
    const a = [modelStep('A', fp(0, null), text('goal A'), 'a1', { system: 'sys' })];
    const b = [modelStep('B', fp(2, 'nope'), text('goal B'), 'b1', { continues: 'A' })];
    const missing = await laneChainSteps(reader({ A: a }).fn, b).catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(ApplicationFailure);
    expect((missing as ApplicationFailure).type).toBe('ContextMismatch');
    expect((missing as ApplicationFailure).message).toMatch(
      /operation A has no step after which its context was ending at nope/,
    );

    const x = [modelStep('X', fp(2, 'y1'), text('x'), 'x1', { continues: 'Y' })];
    const y = [modelStep('Y', fp(2, 'x1'), text('y'), 'y1', { continues: 'X' })];
    const loop = await laneChainSteps(reader({ X: x, Y: y }).fn, x).catch((err: unknown) => err);
    expect((loop as ApplicationFailure).message).toMatch(/loops at/);
  });
});
