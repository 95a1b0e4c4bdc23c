/**
 * Live events on the real Temporal server and the scripted model: a follower sees the model's text
 * while it streams and each tool call as it starts and ends, through the operation's Workflow Stream;
 * a retried model attempt never shows its text twice. The transcript logic is checked on its own too.
 */
import { operationResult } from '../../client/operation-result';
import { LiveTranscript, liveEvents } from '../../client/live';
import { LIVE_TEXT_DELAY_MS, type LiveEvent } from '../../common/live';
import { statusQuery } from '../../common/operation';
import { startOperationHarness, type OperationHarness } from '../support/operation-harness';

const LONG = Array.from({ length: 50 }, (_, i) => `word${i}`).join(' ') + '. The end of a long streamed answer.';
/** What a follower prints for these events (one transcript for the whole run). */
function render(events: LiveEvent[]): string {
  const transcript = new LiveTranscript();
  return events
    .flatMap((event) => transcript.accept(event))
    .map((o) => ('text' in o ? o.text : `${o.line}\n`))
    .join('');
}

describe('live events', () => {
  let h: OperationHarness;
  beforeAll(async () => {
    h = await startOperationHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('shows the text while it streams and each tool call as it starts and ends', async () => {
    // The stream waits, once the step publishes its text (past LIVE_TEXT_DELAY_MS: 18 deltas 60 ms
    // apart), until the follower has seen it and asked for the phase.
    let release: () => void = () => undefined;
    const seen = new Promise<void>((resolve) => (release = resolve));
    expect(18 * 60).toBeGreaterThan(LIVE_TEXT_DELAY_MS);
    h.model.setScript([
      {
        text: LONG,
        eventDelayMs: 60,
        hold: { afterDeltas: 18, until: seen },
        toolCalls: [{ name: 'bash', input: { command: 'echo hi' } }],
      },
      { text: 'finished' },
    ]);
    const handle = await h.start({ goal: 'stream something' });
    const events: LiveEvent[] = [];
    let phaseAtFirstDelta: string | undefined;
    for await (const event of liveEvents(h.temporal.client, handle.workflowId)) {
      if (event.kind === 'model.delta' && phaseAtFirstDelta === undefined) {
        const status = await handle.query(statusQuery);
        phaseAtFirstDelta = `${status.phase} ${status.turn}`;
        release();
      }
      events.push(event);
    }
    expect((await operationResult(handle)).state).toBe('completed');
    // The first text arrived while the first model turn was still running.
    expect(phaseAtFirstDelta).toBe('model 0');
    const kinds = events.map((e) => e.kind);
    expect(kinds.indexOf('model.delta')).toBeLessThan(kinds.indexOf('model.reply'));
    expect(kinds.filter((k) => k !== 'model.delta')).toEqual([
      'model.reply',
      'tool.started',
      'tool.finished',
      'model.reply',
      'operation.ended',
    ]);
    const text = render(events);
    expect(text.split(LONG)).toHaveLength(2); // exactly once
    expect(text).toContain('→ bash: echo hi\n');
    expect(text).toContain('✓ bash: hi\n');
    expect(text).toContain('finished\n■ completed: end_turn\n');
  });

  it('never shows the text of a retried attempt twice', async () => {
    h.model.setScript([
      { text: LONG, eventDelayMs: 60, fault: { type: 'stream_error', afterBlocks: 1 } },
      { text: LONG },
    ]);
    const handle = await h.start({ goal: 'retry the stream' });
    const events: LiveEvent[] = [];
    for await (const event of liveEvents(h.temporal.client, handle.workflowId)) events.push(event);
    expect((await operationResult(handle)).finalText).toBe(LONG);
    expect(events.some((e) => e.kind === 'model.delta' && e.attempt === 1)).toBe(true);
    const text = render(events);
    expect(text.split(LONG)).toHaveLength(2);
    expect(text).not.toContain('restarted');
  });
});

describe('the live transcript', () => {
  const delta = (attempt: number, offset: number, text: string): LiveEvent => ({
    kind: 'model.delta',
    operationId: 'op',
    turn: 1,
    attempt,
    offset,
    text,
  });
  const reply = (text: string): LiveEvent => ({
    kind: 'model.reply',
    operationId: 'op',
    turn: 1,
    text,
    toolCalls: 0,
    usage: { input: 0, cacheWrite: 0, cacheRead: 0, output: 0 },
  });
  const outputOf = (events: LiveEvent[]) => {
    const transcript = new LiveTranscript();
    return events
      .flatMap((e) => transcript.accept(e))
      .map((o) => ('text' in o ? o.text : `<${o.line}>`))
      .join('');
  };

  it('prints a retried attempt only past what was shown', () => {
    expect(
      outputOf([delta(1, 0, 'Hello '), delta(1, 6, 'wor'), delta(2, 0, 'Hello world'), reply('Hello world!')]),
    ).toBe('Hello world!\n');
  });

  it('says when a retried attempt differs instead of repeating it', () => {
    expect(outputOf([delta(1, 0, 'Hello wor'), delta(2, 0, 'Goodbye'), reply('Goodbye.')])).toBe(
      "Hello wor\n<[the model's answer restarted]>Goodbye.\n",
    );
  });

  it('ignores stale attempts and out-of-order deltas', () => {
    expect(outputOf([delta(2, 0, 'Second'), delta(1, 0, 'First'), delta(2, 99, 'gap'), reply('Second.')])).toBe(
      'Second.\n',
    );
  });
});
