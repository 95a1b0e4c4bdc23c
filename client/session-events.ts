/**
 * `getEvents`: the session log (`common/events.ts`) built from Temporal history alone — the session
 * workflow's runs and, recursively, every operation it started (children in its history) and every
 * subagent those started, each across continue-as-new. Events are ordered by the time Temporal
 * recorded them and numbered from 1; filters apply after numbering, so `seq` never depends on them.
 */
import { COMPACT_CONTEXT_ACTIVITY, type CompactContextInput, type CompactContextResult } from '../common/context';
import type { Client } from '@temporalio/client';
import type { ApprovalDecisionInput } from '../common/approvals';
import { EVENT_TYPES, matchesFilter, type EventFilter, type EventType, type SessionEvent } from '../common/events';
import type { ModelStepInput, ModelStepResult } from '../common/model-step';
import { totalTokens } from '../common/model-types';
import { OPERATION_WORKFLOW_TYPE, type OperationInput, type OperationResult } from '../common/operation';
import { sessionIdFor } from '../common/sandbox-names';
import {
  SESSION_WORKFLOW_TYPE,
  sessionIdOfWorkflow,
  sessionWorkflowId,
  type PromptAccepted,
  type PromptInput,
} from '../common/session';
import { toolCallIdOf, type RunToolInput, type ToolOutcome } from '../common/hands';
import { hookDecisionOf, hookSummary, RUN_HOOK_ACTIVITY, type HookRunResult, type RunHookInput } from '../common/hooks';
import { toolSummary } from '../common/tools';
import { eventTimeMs, HistoryReader, payload, type HistoryEvent } from './histories';

const EXCERPT = 500;
const excerpt = (text: string): string => (text.length <= EXCERPT ? text : `${text.slice(0, EXCERPT)}…`);

/** An event before numbering, with what orders it. */
interface Unnumbered extends Omit<SessionEvent, 'seq'> {
  timeMs: number;
  order: string;
}

export type EventSource = { kind: 'session'; sessionId: string } | { kind: 'operation'; operationId: string };

/**
 * Whether `id` names a session (its workflow exists) or an operation; also a session's own workflow
 * id (`session-<id>`, what the Web UI shows). Undefined when no workflow has the id; an error naming
 * the type when the workflow is neither.
 */
export async function eventSourceOf(reader: HistoryReader, id: string): Promise<EventSource | undefined> {
  if (await reader.runs(sessionWorkflowId(id))) return { kind: 'session', sessionId: id };
  const runs = await reader.runs(id);
  if (!runs) return undefined;
  const type = runs.runs[0]?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;
  if (type === OPERATION_WORKFLOW_TYPE) return { kind: 'operation', operationId: id };
  const sessionId = type === SESSION_WORKFLOW_TYPE ? sessionIdOfWorkflow(id) : undefined;
  if (sessionId !== undefined) return { kind: 'session', sessionId };
  throw new Error(
    `${id} is a ${type ?? 'workflow'} workflow; agent events reads sessions and operations (temporal workflow show --workflow-id ${id} shows its history)`,
  );
}

/** The events of a session (or of one operation and its subagents), numbered and filtered. */
export async function getEvents(
  client: Client,
  source: EventSource,
  filter: EventFilter = {},
  reader = new HistoryReader(client),
): Promise<{ events: SessionEvent[]; open: boolean }> {
  const collected: Unnumbered[] = [];
  let open = false;
  const visit = async (operationId: string, rank: string): Promise<void> => {
    const runs = await reader.runs(operationId);
    if (!runs) return;
    open ||= !runs.closed;
    const { events, children } = operationEvents(operationId, runs.runs, rank);
    collected.push(...events);
    for (const [i, child] of children.entries()) await visit(child, `${rank}.${i}`);
  };
  if (source.kind === 'session') {
    const runs = await reader.runs(sessionWorkflowId(source.sessionId));
    if (!runs) throw new Error(`no session ${source.sessionId}`);
    open ||= !runs.closed;
    const { events, children } = sessionEvents(source.sessionId, runs.runs);
    collected.push(...events);
    for (const [i, child] of children.entries()) await visit(child, `1.${i}`);
  } else {
    await visit(source.operationId, '1');
  }
  collected.sort((a, b) => a.timeMs - b.timeMs || (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
  const numbered = collected.map(
    ({ timeMs: _t, order: _o, ...event }, i) => ({ ...event, seq: i + 1 }) as SessionEvent,
  );
  return { events: numbered.filter((event) => matchesFilter(event, filter)), open };
}

function base(
  type: EventType,
  event: HistoryEvent,
  order: string,
  where: { sessionId: string; lane: string | null; operationId: string | null; turn?: number },
  data: Record<string, unknown>,
): Unnumbered {
  const timeMs = eventTimeMs(event);
  return {
    at: new Date(timeMs).toISOString(),
    type,
    ...where,
    ...(where.turn !== undefined ? { turn: where.turn } : { turn: undefined }),
    data,
    timeMs,
    order: `${order}.${String(event.eventId).padStart(9, '0')}.${EVENT_TYPES.indexOf(type)}`,
  };
}

/** The session workflow's own events: accepted prompts, facts, forked lanes; and the operations it started. */
function sessionEvents(sessionId: string, runs: HistoryEvent[][]): { events: Unnumbered[]; children: string[] } {
  const events: Unnumbered[] = [];
  const children: string[] = [];
  runs.forEach((history, runIndex) => {
    const accepted = new Map<string, { event: HistoryEvent; name: string; args: unknown }>();
    const order = `0.${String(runIndex).padStart(4, '0')}`;
    for (const event of history) {
      const child = event.startChildWorkflowExecutionInitiatedEventAttributes;
      if (child?.workflowId) children.push(child.workflowId);
      const update = event.workflowExecutionUpdateAcceptedEventAttributes;
      if (update?.acceptedRequest?.meta?.updateId) {
        accepted.set(update.acceptedRequest.meta.updateId, {
          event,
          name: update.acceptedRequest.input?.name ?? '',
          args: payload(update.acceptedRequest.input?.args),
        });
      }
      const completed = event.workflowExecutionUpdateCompletedEventAttributes;
      const request = completed?.meta?.updateId ? accepted.get(completed.meta.updateId) : undefined;
      if (request && completed?.outcome?.success) {
        const mapped = sessionUpdateEvent(sessionId, request, payload(completed.outcome.success), order);
        if (mapped) events.push(mapped);
      }
      const signal = event.workflowExecutionSignaledEventAttributes;
      if (signal?.signalName === 'laneForked') {
        const fork = payload<Record<string, string>>(signal.input);
        if (fork) {
          events.push(
            base('lane.forked', event, order, { sessionId, lane: fork.lane, operationId: fork.operationId }, fork),
          );
        }
      }
    }
  });
  return { events, children };
}

function sessionUpdateEvent(
  sessionId: string,
  request: { event: HistoryEvent; name: string; args: unknown },
  result: unknown,
  order: string,
): Unnumbered | undefined {
  if (request.name === 'prompt') {
    const prompt = request.args as PromptInput;
    const accepted = result as PromptAccepted;
    return base(
      'prompt.accepted',
      request.event,
      order,
      { sessionId, lane: accepted.lane, operationId: accepted.operationId },
      {
        prompt: excerpt(prompt.prompt),
        state: accepted.state,
        ...(accepted.position ? { position: accepted.position } : {}),
        ...(prompt.newContext ? { newContext: true } : {}),
      },
    );
  }
  if (request.name === 'setFact') {
    const fact = request.args as { key: string; value: string };
    const answer = result as { seq: number; previous?: string };
    return base(
      'fact.set',
      request.event,
      order,
      { sessionId, lane: null, operationId: null },
      {
        key: fact.key,
        value: fact.value,
        seq: answer.seq,
        ...(answer.previous !== undefined ? { previous: answer.previous } : {}),
      },
    );
  }
  return undefined;
}

/** One operation's events over all its runs, and the subagent operations it started. */
function operationEvents(
  operationId: string,
  runs: HistoryEvent[][],
  rank: string,
): { events: Unnumbered[]; children: string[] } {
  const input = payload<OperationInput>(runs[0]?.[0]?.workflowExecutionStartedEventAttributes?.input) ?? {
    goal: '',
  };
  const where = {
    sessionId: input.sessionId ?? sessionIdFor(operationId),
    lane: input.lane ?? 'main',
    operationId,
    turn: 0,
  };
  const out: Unnumbered[] = [];
  const children: string[] = [];
  const scheduled = new Map<string, { type: string; input: unknown }>();
  const tasks = new Map<string, { toolCallId: string; childId: string }>();
  runs.forEach((history, runIndex) => {
    const order = `${rank}.${String(runIndex).padStart(4, '0')}`;
    const emit = (type: EventType, event: HistoryEvent, data: Record<string, unknown>) =>
      out.push(base(type, event, order, { ...where }, data));
    for (const event of history) {
      if (runIndex === 0 && event.workflowExecutionStartedEventAttributes) {
        emit('operation.started', event, startedData(input));
      }
      mapActivityEvent(event, scheduled, where, emit);
      mapChildEvent(event, tasks, children, emit);
      mapMessageEvent(event, emit);
      if (runIndex === runs.length - 1) {
        const ended = endedData(event);
        if (ended) emit('operation.ended', event, ended);
      }
    }
  });
  return { events: out, children };
}

type Emit = (type: EventType, event: HistoryEvent, data: Record<string, unknown>) => void;

function startedData(input: OperationInput): Record<string, unknown> {
  return {
    goal: excerpt(input.goal),
    ...(input.model ? { model: input.model } : {}),
    ...(input.continues ? { continues: input.continues.operationId } : {}),
    ...(input.lineage
      ? { parentOperationId: input.lineage.parentOperationId, toolCallId: input.lineage.toolCallId }
      : {}),
    ...(input.repo ? { repo: input.repo.kind === 'local' ? input.repo.path : input.repo.url } : {}),
  };
}

/** Model steps (`model.reply`), compactions (`context.compacted`) and tool activities (`tool.started`, `tool.finished`). */
function mapActivityEvent(
  event: HistoryEvent,
  scheduled: Map<string, { type: string; input: unknown }>,
  where: { turn: number },
  emit: Emit,
): void {
  const sched = event.activityTaskScheduledEventAttributes;
  if (sched) {
    const type = sched.activityType?.name ?? '';
    const recorded = payload<unknown>(sched.input);
    // A tool call's input may leave its id to the activity id (`RunToolInput.toolCallId`).
    const input =
      type === 'runTool'
        ? {
            ...(recorded as RunToolInput),
            toolCallId: (recorded as RunToolInput).toolCallId ?? toolCallIdOf(sched.activityId ?? ''),
          }
        : recorded;
    scheduled.set(String(event.eventId), { type, input });
    if (type === 'runTool') {
      const call = input as RunToolInput;
      emit('tool.started', event, {
        toolCallId: call.toolCallId,
        name: call.name,
        summary: toolSummary(call.name, call.input),
      });
    }
    return;
  }
  const done = event.activityTaskCompletedEventAttributes;
  const failed =
    event.activityTaskFailedEventAttributes ??
    event.activityTaskTimedOutEventAttributes ??
    event.activityTaskCanceledEventAttributes;
  const ref = done?.scheduledEventId ?? failed?.scheduledEventId;
  const activity = ref != null ? scheduled.get(String(ref)) : undefined;
  if (!activity) return;
  if (activity.type === 'modelStep' && done) {
    const step = activity.input as ModelStepInput;
    const reply = payload<ModelStepResult>(done.result);
    if (!reply) return;
    where.turn = step.turn;
    emit('model.reply', event, {
      text: excerpt(
        reply.message.content
          .map((block) => (block.type === 'text' ? block.text : ''))
          .join('')
          .trim(),
      ),
      toolCalls: reply.message.content
        .filter((block) => block.type === 'tool_use')
        .map((block) =>
          block.type === 'tool_use'
            ? { id: block.id, name: block.name, summary: toolSummary(block.name, block.input) }
            : {},
        ),
      stopReason: reply.stopReason,
      tokens: totalTokens(reply.usage),
      usage: reply.usage,
    });
  } else if (activity.type === COMPACT_CONTEXT_ACTIVITY && done) {
    const step = activity.input as CompactContextInput;
    const result = payload<CompactContextResult>(done.result);
    if (!result) return;
    emit('context.compacted', event, {
      compaction: step.compaction,
      reason: step.reason,
      replacedMessages: result.replacedMessages,
      tokensBefore: result.tokensBefore,
      tokensAfter: result.tokensAfter,
      summary: excerpt(result.summary),
      tokens: totalTokens(result.usage),
      usage: result.usage,
    });
  } else if (activity.type === RUN_HOOK_ACTIVITY && !event.activityTaskCanceledEventAttributes) {
    const failure = failed && 'failure' in failed ? (failed.failure?.message ?? undefined) : undefined;
    const result = done ? payload<HookRunResult>(done.result) : undefined;
    emit('hook.decided', event, hookDecidedData(activity.input as RunHookInput, result, failure));
  } else if (activity.type === 'runTool') {
    const call = activity.input as RunToolInput;
    const outcome = done ? payload<ToolOutcome>(done.result) : undefined;
    const failure = failed && 'failure' in failed ? failed.failure?.message : undefined;
    emit('tool.finished', event, {
      toolCallId: call.toolCallId,
      name: call.name,
      isError: outcome ? outcome.isError === true : true,
      ...(outcome?.exitCode !== undefined ? { exitCode: outcome.exitCode } : {}),
      excerpt: excerpt(outcome?.content ?? failure ?? 'the tool activity did not complete'),
    });
  }
}

/**
 * A hook run's decision, from its activity's input and result: what the operation applied (a run
 * that failed, or an activity that finally failed, decides by the hook's `onError`).
 */
function hookDecidedData(
  run: RunHookInput,
  result: HookRunResult | undefined,
  failure: string | undefined,
): Record<string, unknown> {
  const verdict = result?.verdict ?? {
    kind: 'error' as const,
    error: `hook infrastructure error: ${failure ?? 'the hook activity did not complete'}`,
  };
  const decision = hookDecisionOf(run.event, verdict, run.hook.onError);
  return {
    event: run.event,
    hookRunId: run.hookRunId,
    hook: hookSummary(run.event, run.hook),
    ...(run.toolCallId ? { toolCallId: run.toolCallId, tool: run.toolName } : {}),
    decision: decision.decision,
    ...(decision.reason !== undefined ? { reason: excerpt(decision.reason) } : {}),
    ...(decision.context !== undefined ? { context: excerpt(decision.context) } : {}),
    ...(decision.updatedInput ? { updatedInput: decision.updatedInput } : {}),
    ...(decision.error !== undefined ? { error: excerpt(decision.error), onError: run.hook.onError } : {}),
    ...(decision.systemMessage !== undefined ? { systemMessage: excerpt(decision.systemMessage) } : {}),
    ...(result?.exitCode !== undefined ? { exitCode: result.exitCode } : {}),
    ...(result?.synthetic ? { synthetic: true } : {}),
    ...(result ? { ranOn: result.ranOn } : {}),
  };
}

/** `task` calls: the subagent operation they start and how it ended. */
function mapChildEvent(
  event: HistoryEvent,
  tasks: Map<string, { toolCallId: string; childId: string }>,
  children: string[],
  emit: Emit,
): void {
  const initiated = event.startChildWorkflowExecutionInitiatedEventAttributes;
  if (initiated?.workflowId) {
    const input = payload<OperationInput>(initiated.input);
    const toolCallId = input?.lineage?.toolCallId ?? initiated.workflowId;
    tasks.set(String(event.eventId), { toolCallId, childId: initiated.workflowId });
    children.push(initiated.workflowId);
    emit('tool.started', event, {
      toolCallId,
      name: 'task',
      summary: `task: ${input?.goal ? excerpt(input.goal).slice(0, 100) : initiated.workflowId}`,
      subagentOperationId: initiated.workflowId,
    });
    return;
  }
  const ends = [
    event.childWorkflowExecutionCompletedEventAttributes,
    event.childWorkflowExecutionFailedEventAttributes,
    event.childWorkflowExecutionCanceledEventAttributes,
    event.childWorkflowExecutionTerminatedEventAttributes,
    event.childWorkflowExecutionTimedOutEventAttributes,
    event.startChildWorkflowExecutionFailedEventAttributes,
  ];
  const end = ends.find((attributes) => attributes != null);
  const task = end?.initiatedEventId != null ? tasks.get(String(end.initiatedEventId)) : undefined;
  if (!task) return;
  const result = event.childWorkflowExecutionCompletedEventAttributes
    ? payload<OperationResult>(event.childWorkflowExecutionCompletedEventAttributes.result)
    : undefined;
  emit('tool.finished', event, {
    toolCallId: task.toolCallId,
    name: 'task',
    isError: result?.state !== 'completed',
    excerpt: excerpt(result?.finalText ?? result?.reason ?? 'the subagent did not complete'),
    subagentOperationId: task.childId,
  });
}

/** Steering, aborts and approvals (Updates and memo changes). */
function mapMessageEvent(event: HistoryEvent, emit: Emit): void {
  const update = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
  if (update?.name === 'steer') {
    emit('steering.accepted', event, { text: excerpt(payload<{ text: string }>(update.args)?.text ?? '') });
  } else if (update?.name === 'abort') {
    emit('abort.accepted', event, { reason: payload<{ reason?: string }>(update.args)?.reason ?? 'requested by user' });
  }
  const memo = event.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields?.approval;
  if (memo) {
    const approval = payload<Record<string, unknown> & ApprovalDecisionInput & { state: string }>({ payloads: [memo] });
    if (!approval) return;
    const { state, ...rest } = approval;
    if (state === 'waiting') emit('approval.requested', event, rest);
    else emit('approval.decided', event, { ...rest, decision: state });
  }
}

/** How the operation ended, from its close event. */
function endedData(event: HistoryEvent): Record<string, unknown> | undefined {
  const completed = event.workflowExecutionCompletedEventAttributes;
  if (completed) return resultData(payload<OperationResult>(completed.result));
  const failed = event.workflowExecutionFailedEventAttributes;
  if (failed) {
    const details = payload<OperationResult>(failed.failure?.applicationFailureInfo?.details);
    return details ? resultData(details) : { state: 'failed', reason: failed.failure?.message ?? 'failed' };
  }
  if (event.workflowExecutionCanceledEventAttributes) return { state: 'aborted', reason: 'workflow cancelled' };
  const terminated = event.workflowExecutionTerminatedEventAttributes;
  if (terminated) return { state: 'failed', reason: `terminated: ${terminated.reason ?? ''}`.trim() };
  if (event.workflowExecutionTimedOutEventAttributes) return { state: 'failed', reason: 'timed out' };
  return undefined;
}

function resultData(result: OperationResult | undefined): Record<string, unknown> {
  if (!result) return { state: 'completed', reason: '' };
  return {
    state: result.state,
    reason: result.reason,
    turns: result.turns,
    tokens: totalTokens(result.usage),
    usage: result.usage,
    costUsd: result.costUsd,
    ...(result.finalText ? { finalText: excerpt(result.finalText) } : {}),
  };
}
