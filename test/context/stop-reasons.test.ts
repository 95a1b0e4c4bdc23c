/**
 * Every stop reason the Messages API sends, scripted, through a real operation: none of them ends
 * the operation `completed` unless the model really finished.
 */
import { operationResult } from '../../client/operation-result';
import type { ScriptedStopReason, ScriptedTurn } from '../../scripted-model/script';
import { isCompactionRequest, recordedStepsOf } from '../support/context-scripts';
import { OperationHarness, startOperationHarness } from '../support/operation-harness';

interface Body {
  messages: Array<{ role: string; content: Array<{ type: string; text?: string; content?: unknown }> }>;
}
const bodies = (h: OperationHarness, from: number) =>
  h.model.requests
    .slice(from)
    .filter((r) => r.path === '/v1/messages' && r.status === 200)
    .map((r) => r.body as Body);
const lastUserText = (body: Body) =>
  body.messages
    .at(-1)!
    .content.filter((b) => b.type === 'text')
    .map((b) => b.text)
    .join('\n');
const bash = (command: string): ScriptedTurn => ({ toolCalls: [{ name: 'bash', input: { command } }] });

describe('stop reasons (real Temporal, Docker and scripted model)', () => {
  let h: OperationHarness;
  beforeAll(async () => {
    h = await startOperationHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  const run = async (
    script: ScriptedTurn[] | ((r: Parameters<typeof isCompactionRequest>[0]) => ScriptedTurn),
    input = {},
  ) => {
    h.model.setScript(script);
    const first = h.model.requests.length;
    const handle = await h.start({ goal: 'answer', ...input });
    const result = await operationResult(handle);
    return { result, handle, bodies: bodies(h, first) };
  };

  it('end_turn and stop_sequence complete', async () => {
    const { result } = await run([{ text: 'done', stopReason: 'end_turn' }]);
    expect([result.state, result.reason]).toEqual(['completed', 'end_turn']);
    const second = await run([{ text: 'done', stopReason: 'stop_sequence' }]);
    expect([second.result.state, second.result.reason]).toEqual(['completed', 'stop_sequence']);
  });

  it('max_tokens without a tool call continues the answer, and the final text joins the parts', async () => {
    const { result, bodies: sent } = await run([
      { text: 'The first half of the answer, ', stopReason: 'max_tokens' },
      { text: 'and the second half.' },
    ]);
    expect(result.state).toBe('completed');
    expect(result.turns).toBe(2);
    expect(result.finalText).toBe('The first half of the answer, and the second half.');
    expect(lastUserText(sent[1]!)).toContain('cut off at the max_tokens limit');
    h.model.assertScriptFinished();
  });

  it('max_tokens again and again fails honestly after context.maxContinuations', async () => {
    const cut: ScriptedTurn = { text: 'still going', stopReason: 'max_tokens' };
    const { result } = await run([cut, cut, cut], { context: { maxContinuations: 2 } });
    expect(result.state).toBe('failed');
    expect(result.reason).toBe(
      'the reply was cut off at max_tokens (8192) 3 times in a row (context.maxContinuations is 2)',
    );
    h.model.assertScriptFinished();
  });

  it('max_tokens in the middle of a tool call never runs the call', async () => {
    const { result, bodies: sent } = await run([
      { toolCalls: [{ name: 'bash', input: { command: 'touch /workspace/ran' } }], stopReason: 'max_tokens' },
      { respond: (r) => ({ text: r.toolResults[0]!.content }) },
    ]);
    expect(result.state).toBe('completed');
    expect(result.finalText).toContain('not executed: your reply was cut off at max_tokens');
    expect(sent).toHaveLength(2);
  });

  it('pause_turn passes the paused message back as it is, and the reply continues it', async () => {
    const { result, bodies: sent } = await run([
      { text: 'Searching for a while…', stopReason: 'pause_turn' },
      { text: ' found it.' },
    ]);
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('Searching for a while… found it.');
    // The resumed request ends with the paused assistant message, no new user message.
    expect(sent[1]!.messages).toHaveLength(2);
    expect(sent[1]!.messages[1]).toMatchObject({
      role: 'assistant',
      content: [{ type: 'text', text: 'Searching for a while…' }],
    });
    h.model.assertScriptFinished();
  });

  it('model_context_window_exceeded compacts the context and continues', async () => {
    let compactions = 0;
    let turn = 0;
    const script = (request: Parameters<typeof isCompactionRequest>[0]): ScriptedTurn => {
      if (isCompactionRequest(request)) return { text: `summary ${++compactions}` };
      turn += 1;
      if (turn <= 3) return bash(`echo step ${turn}`);
      if (turn === 4)
        return { text: 'A long answer that filled the window', stopReason: 'model_context_window_exceeded' };
      return { text: ' — and its end.' };
    };
    const { result, handle, bodies: sent } = await run(script as never, { context: { keepTurns: 1 } });
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('A long answer that filled the window — and its end.');
    const steps = await recordedStepsOf(handle);
    const compaction = steps.find((s) => s.kind === 'compaction');
    expect(compaction?.input.reason).toBe('window-full');
    expect(result.tokens.compactions).toBe(1);
    const last = sent.at(-1)!;
    expect(last.messages[0]!.content[0]!.text).toContain('summary 1');
    expect(lastUserText(last)).toContain('the context window was full');
  });

  it('refusal fails', async () => {
    const { result } = await run([{ text: 'I cannot help with that.', stopReason: 'refusal' }]);
    expect([result.state, result.reason]).toEqual(['failed', 'the model refused the request']);
  });

  it('tool_use without a tool call fails', async () => {
    const { result } = await run([{ text: 'calling…', stopReason: 'tool_use' }]);
    expect([result.state, result.reason]).toEqual(['failed', 'the model stopped for tool_use but asked for no tool']);
  });

  it('a stop reason the harness does not know fails with it', async () => {
    // A reason newer than the harness (the server sends whatever the script names).
    const { result } = await run([{ text: 'hm', stopReason: 'context_compacted' as ScriptedStopReason }]);
    expect(result.state).toBe('failed');
    expect(result.reason).toBe('the model stopped for a reason the harness does not handle: context_compacted');
  });
});
