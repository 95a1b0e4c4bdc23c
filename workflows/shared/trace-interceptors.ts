/**
 * The workflow side of tracing (`common/trace.ts`), in every worker bundle
 * (`workflowInterceptorModules`): a traced workflow (operation, coding task) reports its root span
 * through the `agentTrace` sink when it ends — never on replay, so a workflow replayed on another
 * worker reports nothing twice — and passes its trace to its children and, when it is itself a traced
 * parent's child, to its activities and its next run. It draws nothing at random and adds no header
 * to a workflow without a traced parent: a worker with it replays histories recorded without it.
 */
import {
  ApplicationFailure,
  ContinueAsNew,
  defaultPayloadConverter,
  proxySinks,
  workflowInfo,
  type ActivityInput,
  type ContinueAsNewInput,
  type LocalActivityInput,
  type Next,
  type StartChildWorkflowExecutionInput,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { CODING_TASK_WORKFLOW_TYPE, type CodingTaskResult } from '../../common/coding-task';
import type { OperationResult } from '../../common/operation';
import {
  decodeTraceParent,
  encodeTraceParent,
  TRACE_HEADER,
  TRACED_WORKFLOW_TYPES,
  usageAttributes,
  workflowTrace,
  type SpanAttribute,
  type TraceParent,
  type TraceSinks,
  type WorkflowTrace,
} from '../../common/trace';

const { agentTrace } = proxySinks<TraceSinks>();

type Headers = ActivityInput['headers'];

/** What the inbound and outbound interceptors of one workflow share. */
interface TraceState {
  /** The traced parent from the start header; undefined for a workflow that starts its own trace. */
  parent?: TraceParent;
  trace?: WorkflowTrace;
}

export const interceptors = (): WorkflowInterceptors => {
  if (!TRACED_WORKFLOW_TYPES.has(workflowInfo().workflowType)) return {};
  const state: TraceState = {};
  return { inbound: [new TraceInbound(state)], outbound: [new TraceOutbound(state)] };
};

class TraceInbound implements WorkflowInboundCallsInterceptor {
  constructor(private readonly state: TraceState) {}

  async execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const info = workflowInfo();
    this.state.parent = parentOf(input.headers);
    const trace = workflowTrace(info.workflowId, this.state.parent);
    this.state.trace = trace;
    let result: unknown;
    try {
      result = await next(input);
    } catch (err) {
      // The next run reports the span (its start is the chain's, `workflowInfo().startTime`).
      if (!(err instanceof ContinueAsNew)) endRoot(trace, resultCarriedBy(err), err);
      throw err;
    }
    endRoot(trace, result, undefined);
    return result;
  }
}

class TraceOutbound implements WorkflowOutboundCallsInterceptor {
  constructor(private readonly state: TraceState) {}

  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    return next({ ...input, headers: this.forActivity(input.headers) });
  }

  scheduleLocalActivity(
    input: LocalActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
  ) {
    return next({ ...input, headers: this.forActivity(input.headers) });
  }

  startChildWorkflowExecution(
    input: StartChildWorkflowExecutionInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
  ) {
    const trace = this.state.trace;
    if (!trace) return next(input);
    return next({ ...input, headers: withParent(input.headers, { traceId: trace.traceId, spanId: trace.rootSpanId }) });
  }

  continueAsNew(input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>) {
    const parent = this.state.parent;
    return next(parent ? { ...input, headers: withParent(input.headers, parent) } : input);
  }

  /** An activity of a traced parent's child learns the trace; any other derives it from the workflow id. */
  private forActivity(headers: Headers): Headers {
    const { parent, trace } = this.state;
    return parent && trace ? withParent(headers, { traceId: trace.traceId, spanId: trace.rootSpanId }) : headers;
  }
}

/** The traced parent a start header names; none for a missing or malformed header (a start by hand). */
function parentOf(headers: Headers): TraceParent | undefined {
  const header = headers[TRACE_HEADER];
  if (!header) return undefined;
  try {
    return decodeTraceParent(defaultPayloadConverter.fromPayload(header));
  } catch {
    return undefined;
  }
}

function withParent(headers: Headers, parent: TraceParent): Headers {
  return { ...headers, [TRACE_HEADER]: defaultPayloadConverter.toPayload(encodeTraceParent(parent)) };
}

/** The result a failed operation carries in its failure (`OperationFailed`), if any. */
function resultCarriedBy(err: unknown): unknown {
  return err instanceof ApplicationFailure ? err.details?.[0] : undefined;
}

/** Reports the root span; whatever goes wrong here, the workflow's own outcome stays as it is. */
function endRoot(trace: WorkflowTrace, result: unknown, err: unknown): void {
  try {
    reportRoot(trace, result, err);
  } catch {
    // A span not reported: nothing the workflow did changes.
  }
}

function reportRoot(trace: WorkflowTrace, result: unknown, err: unknown): void {
  const info = workflowInfo();
  const isTask = info.workflowType === CODING_TASK_WORKFLOW_TYPE;
  const attributes: Record<string, SpanAttribute> = {
    'temporal.workflow.id': info.workflowId,
    'temporal.workflow.type': info.workflowType,
    'temporal.run.id': info.runId,
    ...(isTask ? taskAttributes(result) : operationAttributes(result)),
  };
  const state = typeof attributes['agent.state'] === 'string' ? attributes['agent.state'] : undefined;
  const reason = typeof attributes['agent.reason'] === 'string' ? attributes['agent.reason'] : undefined;
  const failed = err !== undefined || (state !== undefined && state !== 'completed');
  agentTrace.ended({
    traceId: trace.traceId,
    spanId: trace.rootSpanId,
    ...(trace.parentSpanId ? { parentSpanId: trace.parentSpanId } : {}),
    name: isTask ? 'coding task' : 'operation',
    startMs: info.startTime.getTime(),
    endMs: Date.now(),
    attributes,
    ...(failed ? { error: reason ?? (err instanceof Error ? err.message : String(err)) } : {}),
  });
}

function operationAttributes(result: unknown): Record<string, SpanAttribute> {
  if (!isRecord(result) || typeof result.state !== 'string') return {};
  const op = result as unknown as OperationResult;
  return {
    'agent.operation.id': workflowInfo().workflowId,
    'agent.session.id': op.sessionId,
    'agent.state': op.state,
    'agent.reason': op.reason.slice(0, 500),
    'agent.turns': op.turns,
    'agent.steps': op.steps,
    'agent.cost_usd': op.costUsd,
    ...(op.lane ? { 'agent.lane': op.lane } : {}),
    ...(op.handsHost ? { 'agent.hands_host': op.handsHost } : {}),
    ...usageAttributes(op.usage),
  };
}

function taskAttributes(result: unknown): Record<string, SpanAttribute> {
  if (!isRecord(result) || typeof result.state !== 'string') return {};
  const task = result as unknown as CodingTaskResult;
  return {
    'agent.task.id': task.taskId,
    'agent.session.id': task.sessionId,
    'agent.state': task.state,
    'agent.reason': task.reason.slice(0, 500),
    'agent.task.branch': task.branch,
    'agent.task.features_passing': task.features.filter((f) => f.passes).length,
    'agent.task.commits': task.commits.length,
    'agent.cost_usd': task.costUsd,
    ...usageAttributes(task.usage),
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
