/**
 * `agent trace <id> [--jaeger <url>] [--json]`: the trace of an operation or a coding task as Jaeger
 * holds it (`docs/operations.md#traces`), as a tree — the operation's span, its model steps with
 * tokens, its tool calls with their replay policy, attempt and outcome, a task's operations under
 * it. The trace id is derived from the workflow id (`common/trace.ts`); an operation that lives in
 * its parent's trace (a task's, a subagent's) is found by its `temporal.workflow.id` tag instead.
 */
import { workflowTrace } from '../common/trace';
import { jaegerTrace, type JaegerSpan } from '../platform/jaeger';
import { formatTokens } from './follow';

/** A span as `--json` prints it. */
export interface TraceSpan {
  spanId: string;
  parentSpanId?: string;
  name: string;
  service: string;
  /** Epoch milliseconds. */
  start: number;
  durationMs: number;
  attributes: Record<string, unknown>;
}

export async function traceCommand(id: string, options: { jaeger: string; json: boolean }): Promise<number> {
  const url = options.jaeger;
  const spans = await traceOf(url, id);
  if (!spans.length) {
    console.error(
      `no trace of ${id} in Jaeger at ${url}: were the workers started with OTEL_EXPORTER_OTLP_ENDPOINT pointing at it?`,
    );
    return 1;
  }
  if (options.json) console.log(JSON.stringify(spans, null, 2));
  else console.log(formatTrace(spans).join('\n'));
  return 0;
}

/** The spans of the trace holding `id`'s span (its own trace, or a parent's). */
export async function traceOf(url: string, id: string): Promise<TraceSpan[]> {
  const reach = <T>(what: Promise<T>): Promise<T> =>
    what.catch((err: Error) => {
      throw new Error(`cannot read traces from Jaeger at ${url} (${err.message}): start it with \`npm run jaeger\``);
    });
  const own = await reach(traceById(url, workflowTrace(id, undefined).traceId));
  if (own.length) return own;
  // In a parent's trace: search every service for a span of this workflow.
  const services = await reach(jsonOf<{ data: string[] | null }>(`${url}/api/services`));
  const tags = encodeURIComponent(JSON.stringify({ 'temporal.workflow.id': id }));
  // Microseconds since the epoch: the last 30 days (Jaeger looks back 2 days by default).
  const since = (Date.now() - 30 * 86_400_000) * 1000;
  for (const service of services.data ?? []) {
    const found = await reach(
      jsonOf<{ data: Array<{ traceID: string }> | null }>(
        `${url}/api/traces?service=${encodeURIComponent(service)}&tags=${tags}&start=${since}&limit=1`,
      ),
    );
    const traceId = found.data?.[0]?.traceID;
    if (traceId) return reach(traceById(url, traceId));
  }
  return [];
}

async function jsonOf<T>(url: string): Promise<T> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`HTTP ${response.status} for ${url}`);
  return (await response.json()) as T;
}

/** One trace's spans, in start order; none when Jaeger does not hold it. */
async function traceById(url: string, traceId: string): Promise<TraceSpan[]> {
  return (await jaegerTrace(url, traceId)).map(spanOf).sort((a, b) => a.start - b.start);
}

function spanOf(span: JaegerSpan): TraceSpan {
  const parent = span.references.find((r) => r.refType === 'CHILD_OF')?.spanID;
  return {
    spanId: span.spanID,
    ...(parent ? { parentSpanId: parent } : {}),
    name: span.operationName,
    service: span.service,
    start: Math.round(span.startTime / 1000),
    durationMs: Math.round(span.duration / 1000),
    attributes: Object.fromEntries(span.tags.map((tag) => [tag.key, tag.value])),
  };
}

/** The trace as an indented tree, children in start order, one line per span. */
export function formatTrace(spans: TraceSpan[]): string[] {
  const ids = new Set(spans.map((span) => span.spanId));
  const children = new Map<string | undefined, TraceSpan[]>();
  for (const span of spans) {
    // A span whose parent is not in the trace (not reported yet) shows at the top.
    const parent = span.parentSpanId && ids.has(span.parentSpanId) ? span.parentSpanId : undefined;
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  const lines: string[] = [];
  const walk = (parent: string | undefined, indent: string) => {
    for (const span of children.get(parent) ?? []) {
      lines.push(`${indent}${describeSpan(span)}`);
      walk(span.spanId, `${indent}  `);
    }
  };
  walk(undefined, '');
  return lines;
}

function describeSpan(span: TraceSpan): string {
  const a = span.attributes;
  const parts: string[] = [span.name];
  if (a['agent.operation.id'] ?? a['agent.task.id']) parts.push(String(a['agent.operation.id'] ?? a['agent.task.id']));
  if (a['agent.turn'] !== undefined) parts.push(`turn ${a['agent.turn']}`);
  if (a['agent.tool.replay_policy']) parts.push(`(${a['agent.tool.replay_policy']})`);
  if (a['agent.state']) parts.push(String(a['agent.state']));
  if (a['agent.outcome'] && a['agent.outcome'] !== 'completed') parts.push(String(a['agent.outcome']));
  if (Number(a['agent.attempt']) > 1) parts.push(`attempt ${a['agent.attempt']}`);
  if (a['agent.tool.exit_code'] !== undefined) parts.push(`exit ${a['agent.tool.exit_code']}`);
  if (a['gen_ai.usage.input_tokens'] !== undefined)
    parts.push(
      `${formatTokens(Number(a['gen_ai.usage.input_tokens']))} in / ${formatTokens(Number(a['gen_ai.usage.output_tokens'] ?? 0))} out`,
    );
  if (typeof a['agent.cost_usd'] === 'number') parts.push(`$${a['agent.cost_usd'].toFixed(4)}`);
  parts.push(`${(span.durationMs / 1000).toFixed(2)} s`, `[${span.service}]`);
  if (a['otel.status_code'] === 'ERROR')
    parts.push(`error: ${String(a['otel.status_description'] ?? a['error.type'] ?? '').slice(0, 160)}`);
  return parts.join(' · ');
}
