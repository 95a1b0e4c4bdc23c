/**
 * Sends spans to an OTLP/HTTP endpoint as JSON (`ExportTraceServiceRequest`, the OTLP
 * specification's JSON encoding: hex ids, nanosecond times as strings). Spans are batched: sent when
 * `batchSize` are waiting or `flushMs` after the first one, so a step's span leaves the process
 * within about a second — a worker killed without warning loses at most that much. An endpoint that
 * does not answer keeps its spans for the next send, up to `maxQueued` (the oldest are dropped
 * first, counted and reported once); tracing never fails or slows an activity.
 */
import type { SpanAttribute } from '../../common/trace';
import type { TracingSettings } from './settings';

/** One finished span, ids in hex. */
export interface ExportSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: 'internal' | 'client';
  /** Epoch milliseconds. */
  startMs: number;
  endMs: number;
  attributes: Record<string, SpanAttribute>;
  /** Set for a span that ended badly. */
  error?: string;
}

export interface OtlpExporterOptions {
  batchSize?: number;
  flushMs?: number;
  maxQueued?: number;
  /** Where a failed send is reported (default: stderr). */
  warn?: (line: string) => void;
}

const SCOPE = { name: 'agent-harness' };
const KIND = { internal: 1, client: 3 } as const;
const STATUS_ERROR = 2;

export class OtlpExporter {
  private queue: ExportSpan[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> = Promise.resolve();
  private dropped = 0;
  private failing = false;
  private readonly batchSize: number;
  private readonly flushMs: number;
  private readonly maxQueued: number;
  private readonly warn: (line: string) => void;

  constructor(
    private readonly settings: TracingSettings,
    options: OtlpExporterOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 256;
    this.flushMs = options.flushMs ?? 1_000;
    this.maxQueued = options.maxQueued ?? 8_192;
    this.warn = options.warn ?? ((line) => process.stderr.write(`${line}\n`));
  }

  export(span: ExportSpan): void {
    this.queue.push(span);
    if (this.queue.length > this.maxQueued) {
      this.dropped += this.queue.length - this.maxQueued;
      this.queue.splice(0, this.queue.length - this.maxQueued);
    }
    if (this.queue.length >= this.batchSize) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Sends everything waiting; resolves when the sends so far are done (or failed). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.sending = this.sending.then(() => this.sendWaiting());
    return this.sending;
  }

  private async sendWaiting(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.batchSize);
      const sent = await this.send(batch);
      if (!sent) {
        // Kept for the next flush, oldest first.
        this.queue.unshift(...batch);
        if (!this.timer) {
          this.timer = setTimeout(() => void this.flush(), Math.max(this.flushMs, 5_000));
          this.timer.unref();
        }
        return;
      }
    }
  }

  private async send(batch: ExportSpan[]): Promise<boolean> {
    let problem: string | undefined;
    try {
      const response = await fetch(this.settings.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...this.settings.headers },
        body: JSON.stringify(this.request(batch)),
        signal: AbortSignal.timeout(10_000),
      });
      // The body is read so the connection is reused.
      const body = await response.text();
      if (!response.ok) problem = `HTTP ${response.status} ${body.slice(0, 200)}`;
    } catch (err) {
      problem = (err as Error).message;
    }
    if (problem) {
      if (!this.failing) this.warn(`traces: cannot export to ${this.settings.url}: ${problem} (kept for a later try)`);
      this.failing = true;
      return false;
    }
    if (this.failing) this.warn(`traces: exporting to ${this.settings.url} again`);
    this.failing = false;
    if (this.dropped) {
      this.warn(`traces: ${this.dropped} spans were dropped while the endpoint did not answer`);
      this.dropped = 0;
    }
    return true;
  }

  private request(batch: ExportSpan[]) {
    const resource = { 'service.name': this.settings.serviceName, ...this.settings.resource };
    return {
      resourceSpans: [
        {
          resource: { attributes: attributesOf(resource) },
          scopeSpans: [{ scope: SCOPE, spans: batch.map(otlpSpan) }],
        },
      ],
    };
  }
}

function otlpSpan(span: ExportSpan) {
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
    name: span.name,
    kind: KIND[span.kind],
    startTimeUnixNano: nanos(span.startMs),
    endTimeUnixNano: nanos(Math.max(span.endMs, span.startMs)),
    attributes: attributesOf(span.attributes),
    status: span.error !== undefined ? { code: STATUS_ERROR, message: span.error.slice(0, 500) } : {},
  };
}

const nanos = (ms: number): string => `${BigInt(Math.round(ms)) * 1_000_000n}`;

function attributesOf(attributes: Record<string, SpanAttribute>) {
  return Object.entries(attributes).map(([key, value]) => ({
    key,
    value:
      typeof value === 'string'
        ? { stringValue: value }
        : typeof value === 'boolean'
          ? { boolValue: value }
          : Number.isInteger(value)
            ? { intValue: String(value) }
            : { doubleValue: value },
  }));
}
