/**
 * The spans a worker makes (`common/trace.ts` says which trace each belongs to): one per activity
 * attempt of a traced workflow — a model step, a compaction, a tool call, a hook, a checkpoint, git
 * work — from what `../attempts.ts` observed, and the root span each traced workflow reports through
 * its sink as it ends. A replayed workflow runs no activity and calls no sink, so it makes no span;
 * a retried activity makes one span per attempt (`agent.attempt`), each with its own id.
 */
import { defaultPayloadConverter, type Headers } from '@temporalio/common';
import type { InjectedSinks } from '@temporalio/worker';
import {
  attemptSpanIdOf,
  decodeTraceParent,
  TRACE_HEADER,
  TRACED_WORKFLOW_TYPES,
  usageAttributes,
  workflowTrace,
  type SpanAttribute,
  type TraceParent,
  type TraceSinks,
} from '../../common/trace';
import type { AttemptObserver, ObservedAttempt } from '../attempts';
import { OtlpExporter, type ExportSpan } from './otlp';
import type { TracingSettings } from './settings';

let processExporter: OtlpExporter | undefined;

/** The process's exporter once `enableTracing` ran, else undefined (no spans are made). */
export function tracingOfProcess(): OtlpExporter | undefined {
  return processExporter;
}

export function enableTracing(settings: TracingSettings): OtlpExporter {
  processExporter ??= new OtlpExporter(settings);
  return processExporter;
}

/** A span for every attempt of a traced workflow's activities. */
export function traceObserver(exporter: OtlpExporter): AttemptObserver {
  return {
    ended(attempt) {
      const span = attemptSpan(attempt);
      if (span) exporter.export(span);
    },
  };
}

export function attemptSpan(attempt: ObservedAttempt): ExportSpan | undefined {
  const { info, outcome, failure, model, tool } = attempt;
  if (!TRACED_WORKFLOW_TYPES.has(info.workflowType ?? '')) return undefined;
  const workflow = info.workflowExecution;
  if (!workflow) return undefined;
  const trace = workflowTrace(workflow.workflowId, parentOf(attempt.headers));
  const attributes: Record<string, SpanAttribute> = {
    'temporal.workflow.id': workflow.workflowId,
    'temporal.run.id': workflow.runId,
    'temporal.activity.type': info.activityType,
    'temporal.activity.id': info.activityId,
    'temporal.task_queue': info.taskQueue,
    'agent.attempt': info.attempt,
    'agent.outcome': outcome,
  };
  let name = info.activityType;
  let kind: ExportSpan['kind'] = 'internal';
  if (model) {
    name = model.kind === 'modelStep' ? 'model step' : 'compaction';
    kind = 'client';
    Object.assign(attributes, {
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': model.model,
      ...(model.turn !== undefined ? { 'agent.turn': model.turn } : {}),
      ...(model.stopReason ? { 'gen_ai.response.finish_reasons': model.stopReason } : {}),
      ...usageAttributes(model.usage),
      ...(model.failedAttemptsUsage ? { 'agent.failed_attempts.output_tokens': model.failedAttemptsUsage.output } : {}),
    });
  } else if (tool) {
    name = `tool ${tool.name}`;
    Object.assign(attributes, {
      'gen_ai.tool.name': tool.name,
      'agent.tool.replay_policy': tool.replayPolicy,
      ...(tool.callId ? { 'gen_ai.tool.call.id': tool.callId } : {}),
      ...(tool.exitCode !== undefined ? { 'agent.tool.exit_code': tool.exitCode } : {}),
      ...(tool.egressDenied ? { 'agent.egress.refused': tool.egressDenied } : {}),
    });
  }
  if (failure) attributes['error.type'] = failure.type;
  const failed = outcome === 'failed' || outcome === 'cancelled';
  return {
    traceId: trace.traceId,
    spanId: attemptSpanIdOf(workflow.runId, info.activityId, info.attempt),
    parentSpanId: trace.rootSpanId,
    name,
    kind,
    startMs: attempt.startedAt,
    endMs: attempt.startedAt + attempt.durationMs,
    attributes,
    ...(failed ? { error: failure ? `${failure.type}: ${failure.message}` : outcome } : {}),
  };
}

function parentOf(headers: Headers | undefined): TraceParent | undefined {
  const header = headers?.[TRACE_HEADER];
  if (!header) return undefined;
  try {
    return decodeTraceParent(defaultPayloadConverter.fromPayload(header));
  } catch {
    return undefined;
  }
}

/**
 * The sink a traced workflow reports its root span through; a no-op without an exporter (the
 * workflow code is the same in every worker). Never called on replay.
 */
export function traceSinks(exporter: OtlpExporter | undefined): InjectedSinks<TraceSinks> {
  return {
    agentTrace: {
      ended: {
        fn: (_info, span) => exporter?.export({ ...span, kind: 'internal' }),
        callDuringReplay: false,
      },
    },
  };
}
