/**
 * Trace identity, shared by the workflow side (`workflows/shared/trace-interceptors.ts`) and the
 * activity side (`activities/tracing/`). Exported over OTLP (`activities/tracing/otlp.ts`).
 *
 * One trace per operation: its root span is the operation (or the coding task) from its first run to
 * its end; its model steps, tool calls and other activity attempts are its children; a coding task's
 * operations and an operation's subagents are children of their parent's root span, in its trace.
 * A session's lanes start traces of their own (a session lives for days).
 *
 * Every id is derived from what the history holds — the workflow id, the run id, the activity id and
 * the attempt — never drawn at random: a replayed workflow names the same spans, and a workflow
 * without a traced parent carries no trace header at all (the activity derives its trace from the
 * workflow id). Only a child of a traced parent has the header, on its start, its continue-as-new and
 * its activities.
 */
import type { Sinks } from '@temporalio/workflow';
import { CODING_TASK_WORKFLOW_TYPE } from './coding-task';
import type { TokenUsage } from './model-types';
import { OPERATION_WORKFLOW_TYPE } from './operation';

/** The header carrying a traced parent's context to a child workflow and its activities. */
export const TRACE_HEADER = 'agent-trace';

/** The workflow types whose runs are traced (their activities get spans, their ends a root span). */
export const TRACED_WORKFLOW_TYPES: ReadonlySet<string> = new Set([OPERATION_WORKFLOW_TYPE, CODING_TASK_WORKFLOW_TYPE]);

/** Where a traced workflow's spans hang: its trace, and the span its root span is a child of. */
export interface TraceParent {
  /** 32 hex digits. */
  traceId: string;
  /** 16 hex digits: the parent workflow's root span. */
  spanId: string;
}

/** The context of a traced workflow: its trace, its root span, and the root's parent if any. */
export interface WorkflowTrace {
  traceId: string;
  rootSpanId: string;
  parentSpanId?: string;
}

/** The W3C `traceparent` form of a parent (`00-<trace>-<span>-01`), the header's payload. */
export function encodeTraceParent(parent: TraceParent): string {
  return `00-${parent.traceId}-${parent.spanId}-01`;
}

/** A header's parent, or undefined for anything that is not a valid `traceparent`. */
export function decodeTraceParent(value: unknown): TraceParent | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(value);
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined;
  return { traceId: match[1]!, spanId: match[2]! };
}

/** A workflow's trace: its traced parent's, or one of its own named by its workflow id. */
export function workflowTrace(workflowId: string, parent: TraceParent | undefined): WorkflowTrace {
  return {
    traceId: parent?.traceId ?? traceIdOf(workflowId),
    rootSpanId: rootSpanIdOf(workflowId),
    ...(parent ? { parentSpanId: parent.spanId } : {}),
  };
}

/** The root span of a workflow (every run of it): derived from its id. */
export function rootSpanIdOf(workflowId: string): string {
  return hex64(`root\u0000${workflowId}`);
}

/** The span of one activity attempt: derived from its run, activity id and attempt. */
export function attemptSpanIdOf(runId: string, activityId: string, attempt: number): string {
  return hex64(`attempt\u0000${runId}\u0000${activityId}\u0000${attempt}`);
}

function traceIdOf(workflowId: string): string {
  return hex64(`trace\u0000${workflowId}`) + hex64(`trace-low\u0000${workflowId}`);
}

/**
 * 16 hex digits of FNV-1a (64 bit) over the UTF-16 code units of `text` — deterministic in the
 * workflow sandbox and in Node alike; never all zeros (an invalid id in W3C trace context).
 */
function hex64(text: string): string {
  let hash = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return (hash === 0n ? 1n : hash).toString(16).padStart(16, '0');
}

/** An attribute value of a span. */
export type SpanAttribute = string | number | boolean;

/** A span the workflow side reports once, at the end of a traced workflow (never on replay). */
export interface WorkflowSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** Epoch milliseconds (workflow time). */
  startMs: number;
  endMs: number;
  attributes: Record<string, SpanAttribute>;
  /** Set when the workflow ended badly: the reason. */
  error?: string;
}

/** Token counts by class, and the GenAI conventions' input (every prompt token) and output totals. */
export function usageAttributes(usage: TokenUsage | undefined): Record<string, SpanAttribute> {
  if (!usage) return {};
  return {
    'gen_ai.usage.input_tokens': usage.input + usage.cacheWrite + usage.cacheRead,
    'gen_ai.usage.output_tokens': usage.output,
    'gen_ai.usage.cache_read.input_tokens': usage.cacheRead,
    'gen_ai.usage.cache_creation.input_tokens': usage.cacheWrite,
  };
}

export interface TraceSinks extends Sinks {
  agentTrace: {
    /** A traced workflow ended: its root span. */
    ended(span: WorkflowSpan): void;
  };
}
