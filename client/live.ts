/**
 * Following an operation live (`common/live.ts`): one Workflow Stream subscriber per follower process
 * and operation (a parked poll is one of the workflow's 10 in-flight Updates, so viewers in one
 * process share it), and a transcript that turns live events into text without ever repeating what
 * it has shown — a retried model attempt re-sends text from its start.
 */
import type { Client } from '@temporalio/client';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import { LIVE_TOPIC, type LiveEvent } from '../common/live';
import { ZERO_USAGE } from '../common/model-types';
import { operationResult } from './operation-result';

/**
 * Yields the operation's live events until it closes or `signal` aborts, ending with
 * `operation.ended` (read from the result when the stream closed before delivering it). Starts at
 * the oldest event the operation still keeps (the previous turn onwards).
 */
export async function* liveEvents(
  client: Client,
  operationId: string,
  options: { signal?: AbortSignal } = {},
): AsyncGenerator<LiveEvent> {
  const stream = WorkflowStreamClient.create(client, operationId);
  const items = stream.topic<LiveEvent>(LIVE_TOPIC).subscribe(0, { pollCooldown: 200 });
  const aborted = new Promise<'aborted'>((resolve) => {
    if (options.signal?.aborted) resolve('aborted');
    options.signal?.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
  let ended = false;
  let turn = 0;
  let repliedTurn = 0;
  try {
    for (;;) {
      const next = await Promise.race([items.next(), aborted]);
      if (next === 'aborted') return;
      if (next.done) break;
      const event = next.value.data;
      ended ||= event.kind === 'operation.ended';
      turn = event.turn;
      if (event.kind === 'model.reply') repliedTurn = event.turn;
      yield event;
    }
    // Events published as the workflow closed reach only a poll parked at that moment: the rest
    // comes from the result.
    if (!ended) yield* endFromResult(client, operationId, turn, repliedTurn);
  } finally {
    // A parked poll ends with the workflow or its next answer; do not wait for it.
    void items.return(undefined).catch(() => undefined);
  }
}

async function* endFromResult(
  client: Client,
  operationId: string,
  turn: number,
  repliedTurn: number,
): AsyncGenerator<LiveEvent> {
  const result = await operationResult(client.workflow.getHandle(operationId)).catch((err: Error) => err);
  if (result instanceof Error) {
    yield { kind: 'operation.ended', operationId, turn, state: 'failed', reason: result.message };
    return;
  }
  if (result.turns > repliedTurn && result.finalText) {
    yield {
      kind: 'model.reply',
      operationId,
      turn: result.turns,
      text: result.finalText,
      toolCalls: 0,
      usage: ZERO_USAGE,
    };
  }
  yield { kind: 'operation.ended', operationId, turn: result.turns, state: result.state, reason: result.reason };
}

/** What a follower prints: text to append to the current line, or whole lines. */
export type TranscriptOutput = { text: string } | { line: string };

/**
 * Turns live events into output, once: per model turn it remembers the text shown, so a delta of a
 * retried attempt that repeats it prints nothing, and a reply that differs from what was shown says
 * so instead of printing the same words twice.
 */
export class LiveTranscript {
  private readonly shown = new Map<string, string>();
  private readonly attempts = new Map<string, { attempt: number; text: string }>();
  private openLine = false;

  constructor(private readonly options: { operationLabel?: (operationId: string) => string } = {}) {}

  accept(event: LiveEvent): TranscriptOutput[] {
    const key = `${event.operationId}#${event.turn}`;
    switch (event.kind) {
      case 'model.delta': {
        const current = this.attempts.get(key);
        if (current && event.attempt < current.attempt) return [];
        const base = current && current.attempt === event.attempt ? current.text : '';
        if (event.offset !== base.length) return []; // a gap or a repeat: the reply fills it in
        const text = base + event.text;
        this.attempts.set(key, { attempt: event.attempt, text });
        return this.showText(key, text);
      }
      case 'model.reply': {
        const out = event.text ? this.showText(key, event.text) : [];
        this.attempts.delete(key);
        return [...out, ...this.endLine()];
      }
      default:
        return [...this.endLine(), { line: this.describe(event) }];
    }
  }

  /** Prints whatever of `text` has not been shown for this turn. */
  private showText(key: string, text: string): TranscriptOutput[] {
    const shown = this.shown.get(key) ?? '';
    if (text.startsWith(shown)) {
      if (text.length === shown.length) return [];
      this.shown.set(key, text);
      this.openLine = true;
      return [{ text: text.slice(shown.length) }];
    }
    if (shown.startsWith(text)) return []; // a retried attempt catching up with what is on screen
    this.shown.set(key, text);
    this.openLine = true;
    return [...this.endLine(), { line: "[the model's answer restarted]" }, { text }];
  }

  private endLine(): TranscriptOutput[] {
    if (!this.openLine) return [];
    this.openLine = false;
    return [{ text: '\n' }];
  }

  private describe(event: Exclude<LiveEvent, { kind: 'model.delta' | 'model.reply' }>): string {
    const who = this.options.operationLabel ? `${this.options.operationLabel(event.operationId)} ` : '';
    switch (event.kind) {
      case 'tool.started':
        return `${who}→ ${event.summary}`;
      case 'tool.finished':
        return `${who}${event.isError ? '✗' : '✓'} ${event.name}${event.excerpt ? `: ${firstLine(event.excerpt)}` : ''}`;
      case 'approval.requested':
        return `${who}⏸ waiting for approval: ${event.summary} (agent approve ${event.operationId} ${event.toolCallId} [--deny "why"])`;
      case 'approval.decided':
        return `${who}${event.decision === 'approved' ? '▶ approved' : '✗ denied'} ${event.toolCallId} (${event.by})`;
      case 'operation.ended':
        return `${who}■ ${event.state}: ${event.reason}`;
      case 'environment.progress':
        return `${who}⚙ ${event.line}${event.tail.length ? `\n    ${event.tail.join('\n    ')}` : ''}`;
    }
  }
}

function firstLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim()) ?? '';
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}
