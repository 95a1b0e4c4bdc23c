/**
 * The model step's side of the live events (`common/live.ts`): the reply's text, published into the
 * operation's Workflow Stream as it streams. Text is buffered for the first `LIVE_TEXT_DELAY_MS`, so
 * a quick reply is never streamed (it costs no history; its text comes with `model.reply`); after
 * that, buffered text goes out every `LIVE_TEXT_BATCH_MS` as one signal. Each delta carries the
 * attempt and its offset in that attempt's text, so a follower never shows a retried attempt's text
 * twice. Publishing is best effort: it never fails the model step.
 */
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { LIVE_TEXT_BATCH_MS, LIVE_TEXT_DELAY_MS, LIVE_TOPIC, type LiveEvent } from '../../common/live';

export class LiveText {
  private stream: WorkflowStreamClient | undefined;
  private buffered = '';
  private offset = 0;
  private readonly startedAt = Date.now();

  constructor(
    private readonly step: { operationId: string; turn: number; attempt: number },
    private readonly delayMs = LIVE_TEXT_DELAY_MS,
  ) {}

  /** Takes every stream event; only text deltas matter. */
  onStreamEvent = (event: RawMessageStreamEvent): void => {
    if (event.type !== 'content_block_delta' || event.delta.type !== 'text_delta') return;
    this.buffered += event.delta.text;
    if (!this.stream && Date.now() - this.startedAt < this.delayMs) return;
    this.publish();
  };

  /** Sends what is buffered (once streaming has started) and waits for it to be delivered. */
  async close(): Promise<void> {
    if (!this.stream) return;
    this.publish();
    try {
      await this.stream[Symbol.asyncDispose]();
    } catch {
      // A follower misses some text; the reply itself is unaffected.
    }
  }

  private publish(): void {
    if (!this.buffered) return;
    try {
      this.stream ??= WorkflowStreamClient.fromWithinActivity({ batchInterval: LIVE_TEXT_BATCH_MS });
      const event: LiveEvent = { kind: 'model.delta', ...this.step, offset: this.offset, text: this.buffered };
      this.stream.topic<LiveEvent>(LIVE_TOPIC).publish(event);
      this.offset += this.buffered.length;
      this.buffered = '';
    } catch {
      // Best effort (see the module comment).
    }
  }
}
