/**
 * The tool batch of one turn: each call the model asked for, in order, as its own activity on the
 * hands queue (id `tool-<toolCallId>`, summary `bash: npm test`). A call is prepared (validated
 * against the catalogue: an invalid call records no intent, the refusal is its result), checked
 * against the operation's approval policy (`approvals.ts`: a denied call records no intent, its
 * denial is its result; an `ask` call waits for a person), executed, and turned into the
 * `tool_result` the model sees next. A `task` call runs a subagent operation instead of a hands
 * activity (`subagents.ts`). After an abort the remaining calls are answered without running.
 */
import { ActivityFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { ApprovalDecision } from '../common/approvals';
import type { HandsActivities } from '../common/hands';
import { LIVE_EXCERPT_CHARS } from '../common/live';
import type { TailBlock } from '../common/model-step';
import type { ToolResultBlockParam, ToolUseBlock } from '../common/model-types';
import {
  toolMainArgument,
  toolRunTimeoutMs,
  toolSummary,
  validateModelToolCall,
  type TaskInput,
  type ToolInput,
  type ToolName,
} from '../common/tools';
import { awaitApproval, policyFor } from './approvals';
import { heartbeatOverride, type OperationRun } from './operation-state';
import { toolActivityOptions } from './policies';
import type { OperationSandbox } from './sandbox';
import { stuckDetectionOn, watchActivity } from './stuck';
import { runSubagent } from './subagents';
import { toolResult } from './tool-result';
import { showDetails } from './visibility';

type PreparedCall =
  | { ok: true; kind: 'sandbox'; input: ToolInput<ToolName>; summary: string; approval: ApprovalDecision }
  | { ok: true; kind: 'task'; input: TaskInput; summary: string; approval: ApprovalDecision }
  | { ok: false; result: ToolResultBlockParam };

export async function runToolBatch(
  op: OperationRun,
  sandbox: OperationSandbox,
  calls: ToolUseBlock[],
): Promise<TailBlock[]> {
  const results: TailBlock[] = [];
  for (const call of calls) op.seenToolCalls.add(call.id);
  for (const call of calls) {
    if (op.abortReason !== undefined) {
      results.push(toolResult(call.id, `not run: the operation was aborted (${op.abortReason})`, true));
      continue;
    }
    results.push(await runToolCall(op, sandbox, call));
  }
  return results;
}

async function runToolCall(
  op: OperationRun,
  sandbox: OperationSandbox,
  call: ToolUseBlock,
): Promise<ToolResultBlockParam> {
  const result = await prepareAndRun(op, sandbox, call);
  op.live.publish(op.carry.turn, {
    kind: 'tool.finished',
    toolCallId: call.id,
    name: call.name,
    isError: result.is_error === true,
    excerpt: excerptOf(result),
  });
  return result;
}

async function prepareAndRun(
  op: OperationRun,
  sandbox: OperationSandbox,
  call: ToolUseBlock,
): Promise<ToolResultBlockParam> {
  const prepared = prepareToolCall(op, call);
  if (!prepared.ok) return prepared.result;
  const refusal = prepared.approval.policy === 'ask' ? await awaitApproval(op, call, prepared) : undefined;
  if (refusal) return refusal;
  op.live.publish(op.carry.turn, {
    kind: 'tool.started',
    toolCallId: call.id,
    name: call.name,
    summary: prepared.summary,
  });
  return prepared.kind === 'task'
    ? runSubagent(op, call, prepared.input)
    : executeToolCall(op, sandbox, call, prepared);
}

function excerptOf(result: ToolResultBlockParam): string {
  const text =
    typeof result.content === 'string'
      ? result.content
      : (result.content ?? []).map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join('\n');
  return text.length <= LIVE_EXCERPT_CHARS ? text : `${text.slice(0, LIVE_EXCERPT_CHARS)}…`;
}

function prepareToolCall(op: OperationRun, call: ToolUseBlock): PreparedCall {
  const checked = validateModelToolCall(call.name, call.input);
  if (!checked.ok) {
    op.lastTool = { name: call.name, summary: `${call.name}: invalid arguments`, isError: true };
    return { ok: false, result: toolResult(call.id, checked.error, true) };
  }
  const summary = toolSummary(call.name, checked.input);
  const approval = policyFor(op, call.name, toolMainArgument(call.name, checked.input));
  if (approval.policy === 'deny') {
    op.lastTool = { name: call.name, summary, isError: true };
    return {
      ok: false,
      result: toolResult(
        call.id,
        `denied: the operation's approval policy refuses this call (rule "${approval.rule ?? 'deny'}"). It was not run. Do not retry it; find another way or explain what you need.`,
        true,
      ),
    };
  }
  return checked.kind === 'task'
    ? { ok: true, kind: 'task', input: checked.input, summary, approval }
    : { ok: true, kind: 'sandbox', input: checked.input, summary, approval };
}

async function executeToolCall(
  op: OperationRun,
  sandbox: OperationSandbox,
  call: ToolUseBlock,
  prepared: Extract<PreparedCall, { kind: 'sandbox' }>,
): Promise<ToolResultBlockParam> {
  const { summary } = prepared;
  const name = call.name as ToolName;
  op.lastTool = { name, summary };
  showDetails(op);
  try {
    const timeoutMs = toolRunTimeoutMs(name, prepared.input, op.settings.toolTimeoutMs);
    const activityId = `tool-${call.id}`;
    const outcome = await sandbox.use(() => {
      op.carry.steps += 1;
      return sandbox.route.call((taskQueue) => {
        const { runTool } = proxyActivities<HandsActivities>({
          ...toolActivityOptions(name, prepared.input, op.settings.toolTimeoutMs),
          ...heartbeatOverride(op),
          taskQueue,
          activityId,
          summary,
        });
        const run = () =>
          runTool({
            sessionId: op.sessionId,
            operationId: op.operationId,
            toolCallId: call.id,
            name,
            input: prepared.input,
            timeoutMs,
          });
        const host = sandbox.route.host?.host;
        return stuckDetectionOn()
          ? watchActivity(op, { activityId, taskQueue, waitingOn: `tool ${summary}`, host }, run)
          : run();
      });
    });
    op.toolOutcomes.set(call.id, outcome);
    op.lastTool = { name, summary, isError: outcome.isError };
    return toolResult(call.id, outcome.content, outcome.isError);
  } catch (err) {
    if (isCancellation(err) || op.abortReason !== undefined) {
      op.abortReason ??= 'cancelled';
      return toolResult(
        call.id,
        `interrupted: the operation was aborted (${op.abortReason}) while this call ran; its process was stopped. The workspace is preserved.`,
        true,
      );
    }
    // Retries exhausted or a non-retryable infrastructure failure: the model hears about it.
    const message = err instanceof ActivityFailure && err.cause ? err.cause.message : (err as Error).message;
    op.lastTool = { name, summary, isError: true };
    return toolResult(call.id, `tool infrastructure error: ${message}`, true);
  }
}

export { toolResult };
