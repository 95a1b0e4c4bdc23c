/**
 * The tool batch of one turn: each call the model asked for as its own activity on the hands queue
 * (id `tool-<toolCallId>`, summary `bash: npm test`). A call is prepared (validated against the
 * catalogue: an invalid call records no intent, the refusal is its result), checked against the
 * operation's approval policy (`approvals.ts`: a denied call records no intent, its denial is its
 * result; an `ask` call waits for a person), executed, and turned into the `tool_result` the model
 * sees next. A `task` call runs a subagent operation instead of a hands activity (`subagents.ts`).
 * Calls run one after the other, in the model's order — except a batch of only `safe` calls that
 * need no approval (reads, listings, searches: they change nothing, so their order cannot matter),
 * whose calls run at once. Results are always in the model's order. After an abort the remaining
 * calls are answered without running.
 */
import { ActivityFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import { isPatched } from '../shared/patches';
import type { ApprovalDecision } from '../../common/approvals';
import { toolActivityId, type HandsActivities, type ToolCallCheckpoint } from '../../common/hands';
import { LIVE_EXCERPT_CHARS } from '../../common/live';
import type { TailBlock } from '../../common/context-fingerprint';
import type { ToolResultBlockParam, ToolUseBlock } from '../../common/model-types';
import {
  budgetGoesWithoutSaying,
  replayPolicyOf,
  toolMainArgument,
  toolRunTimeoutMs,
  toolSummary,
  validateModelToolCall,
  type TaskInput,
  type ToolInput,
  type ToolName,
} from '../../common/tools';
import { awaitApproval, policyFor } from './approvals';
import { checkpointWithLastCall, recordCheckpointOfCall } from './checkpoints';
import { heartbeatOverride, type OperationRun } from './state';
import { toolActivityOptions } from '../shared/policies';
import type { OperationSandbox } from './sandbox';
import { stuckDetectionOn, watchActivity } from './stuck';
import { runSubagent } from './subagents';
import { isMcpToolName, runMcpToolCall } from './mcp-tools';
import { postToolUse, preToolUse, toolHooksApply, toolHooksFor, withNotes, type ToolGate } from './hooks';
import { toolResult } from './tool-result';
import { showDetails } from './visibility';

type PreparedCall =
  | { ok: true; kind: 'sandbox'; input: ToolInput<ToolName>; summary: string; approval: ApprovalDecision }
  | { ok: true; kind: 'task'; input: TaskInput; summary: string; approval: ApprovalDecision }
  | { ok: false; result: ToolResultBlockParam };

/** Histories recorded before safe batches ran in parallel ran every batch in order. */
export const PARALLEL_SAFE_BATCH_PATCH = 'parallel-safe-tool-batch';

export async function runToolBatch(
  op: OperationRun,
  sandbox: OperationSandbox,
  calls: ToolUseBlock[],
): Promise<TailBlock[]> {
  if (calls.length > 1 && calls.every((call) => replayPolicyOf(call.name) === 'safe' && !needsApproval(op, call))) {
    // hooks: a hook may ask a person, and hooks run one at a time: a batch with tool hooks runs in order.
    if (!toolHooksApply(op, calls) && isPatched(PARALLEL_SAFE_BATCH_PATCH)) return runSafeBatch(op, sandbox, calls);
  }
  // checkpoints: the batch's last call records the turn's checkpoint in its own activity when it can.
  const last = calls.at(-1);
  const checkpoint = last && !toolHooksFor(op, last.name) ? checkpointWithLastCall(op, calls) : undefined;
  const results: TailBlock[] = [];
  for (const [index, call] of calls.entries())
    results.push(await runOne(op, sandbox, call, index === calls.length - 1 ? checkpoint : undefined));
  return results;
}

/**
 * A batch of only `safe` calls: the workspace is made ready once, under the session's lease (so no
 * two calls provision it), then every call runs at the same time.
 */
async function runSafeBatch(op: OperationRun, sandbox: OperationSandbox, calls: ToolUseBlock[]): Promise<TailBlock[]> {
  try {
    await sandbox.use(async () => undefined);
  } catch (err) {
    if (isCancellation(err) || op.abortReason !== undefined) op.noteCancelled();
    const problem = `tool infrastructure error: ${failureMessage(err)}`;
    // No call ran: an invalid one still gets its refusal, the others the reason they did not run.
    return calls.map((call) => {
      const prepared = prepareToolCall(op, call);
      if (!prepared.ok) return prepared.result;
      if (op.abortReason !== undefined) return notRun(op, call);
      op.showTool({ name: call.name, summary: prepared.summary, isError: true });
      return toolResult(call.id, problem, true);
    });
  }
  return Promise.all(calls.map((call) => runOne(op, sandbox, call)));
}

async function runOne(
  op: OperationRun,
  sandbox: OperationSandbox,
  call: ToolUseBlock,
  checkpoint?: ToolCallCheckpoint,
): Promise<ToolResultBlockParam> {
  if (op.abortReason !== undefined) return notRun(op, call);
  return runToolCall(op, sandbox, call, checkpoint);
}

/** Whether the operation's approval policy asks a person before this call runs. */
function needsApproval(op: OperationRun, call: ToolUseBlock): boolean {
  const checked = validateModelToolCall(call.name, call.input);
  return checked.ok && policyFor(op, call.name, toolMainArgument(call.name, checked.input)).policy === 'ask';
}

const notRun = (op: OperationRun, call: ToolUseBlock): ToolResultBlockParam =>
  toolResult(call.id, `not run: the operation was aborted (${op.abortReason})`, true);

async function runToolCall(
  op: OperationRun,
  sandbox: OperationSandbox,
  call: ToolUseBlock,
  checkpoint?: ToolCallCheckpoint,
): Promise<ToolResultBlockParam> {
  const result = await prepareAndRun(op, sandbox, call, checkpoint);
  op.callReached(call.id);
  op.live.publish(op.carry.turn, {
    kind: 'tool.finished',
    toolCallId: call.id,
    name: call.name,
    isError: result.is_error === true,
    excerpt: excerptOf(result),
  });
  return result;
}

/** `checkpoint`: the turn's checkpoint, recorded by the call's activity (a sandbox tool call only). */
async function prepareAndRun(
  op: OperationRun,
  sandbox: OperationSandbox,
  call: ToolUseBlock,
  checkpoint?: ToolCallCheckpoint,
): Promise<ToolResultBlockParam> {
  // hooks: a tool that PreToolUse or PostToolUse hooks name takes the hooked path (`hooks.ts`).
  if (toolHooksFor(op, call.name)) return prepareAndRunHooked(op, sandbox, call);
  // MCP tools (`mcp__<server>__<tool>`) are validated, approved and run by `mcp-tools.ts`.
  if (isMcpToolName(call.name)) return runMcpToolCall(op, call);
  const prepared = prepareToolCall(op, call);
  if (!prepared.ok) return prepared.result;
  const refusal = prepared.approval.policy === 'ask' ? await awaitApproval(op, call, prepared) : undefined;
  if (refusal) return refusal;
  return runPrepared(op, sandbox, call, prepared, checkpoint);
}

function runPrepared(
  op: OperationRun,
  sandbox: OperationSandbox,
  call: ToolUseBlock,
  prepared: Extract<PreparedCall, { ok: true }>,
  checkpoint?: ToolCallCheckpoint,
): Promise<ToolResultBlockParam> {
  op.live.publish(op.carry.turn, {
    kind: 'tool.started',
    toolCallId: call.id,
    name: call.name,
    summary: prepared.summary,
  });
  return prepared.kind === 'task'
    ? runSubagent(op, call, prepared.input)
    : executeToolCall(op, sandbox, call, prepared, checkpoint);
}

/**
 * A call with tool hooks: validated, then its PreToolUse hooks (deny, ask, a replaced input checked
 * again like the model's), the approval policy (a hook's `ask` waits for a person too), the call,
 * and its PostToolUse hooks, whose word joins the result.
 */
async function prepareAndRunHooked(
  op: OperationRun,
  sandbox: OperationSandbox,
  call: ToolUseBlock,
): Promise<ToolResultBlockParam> {
  if (isMcpToolName(call.name)) return runHookedMcpCall(op, sandbox, call);
  let prepared = prepareToolCall(op, call);
  if (!prepared.ok) return prepared.result;
  const gate = await preToolUse(op, sandbox, call, prepared.input, toolMainArgument(call.name, prepared.input));
  if (gate.refusal) return gate.refusal;
  if (gate.input !== undefined) {
    prepared = prepareToolCall(op, { ...call, input: gate.input });
    if (!prepared.ok) return replacedInputRefused(prepared.result);
  }
  const ask = prepared.approval.policy === 'ask' ? prepared.approval : gate.ask ? hookAsks(gate) : undefined;
  const refusal = ask ? await awaitApproval(op, call, { summary: prepared.summary, approval: ask }) : undefined;
  if (refusal) return refusal;
  const result = withNotes(await runPrepared(op, sandbox, call, prepared), gate.notes);
  if (op.abortReason !== undefined) return result;
  return postToolUse(op, sandbox, call, prepared.input, toolMainArgument(call.name, prepared.input), result);
}

/** An MCP call with tool hooks: its hooks see the model's arguments; `mcp-tools.ts` checks and runs it. */
async function runHookedMcpCall(
  op: OperationRun,
  sandbox: OperationSandbox,
  call: ToolUseBlock,
): Promise<ToolResultBlockParam> {
  const mainArgument = JSON.stringify(call.input ?? {});
  const gate = await preToolUse(op, sandbox, call, call.input, mainArgument);
  if (gate.refusal) return gate.refusal;
  const input = gate.input ?? call.input;
  if (gate.ask) {
    const refusal = await awaitApproval(op, call, { summary: call.name, approval: hookAsks(gate) });
    if (refusal) return refusal;
  }
  const result = withNotes(await runMcpToolCall(op, { ...call, input }), gate.notes);
  if (op.abortReason !== undefined) return result;
  return postToolUse(op, sandbox, call, input, JSON.stringify(input ?? {}), result);
}

const hookAsks = (gate: ToolGate): ApprovalDecision => ({ policy: 'ask', rule: `PreToolUse hook: ${gate.ask}` });

function replacedInputRefused(result: ToolResultBlockParam): ToolResultBlockParam {
  const said = typeof result.content === 'string' ? result.content : 'invalid arguments';
  return toolResult(
    result.tool_use_id,
    `not run: a PreToolUse hook replaced this call's input with one that is not valid: ${said}`,
    true,
  );
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
    op.showTool({ name: call.name, summary: `${call.name}: invalid arguments`, isError: true });
    return { ok: false, result: toolResult(call.id, checked.error, true) };
  }
  const summary = toolSummary(call.name, checked.input);
  const approval = policyFor(op, call.name, toolMainArgument(call.name, checked.input));
  if (approval.policy === 'deny') {
    op.showTool({ name: call.name, summary, isError: true });
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
  checkpoint?: ToolCallCheckpoint,
): Promise<ToolResultBlockParam> {
  const { summary } = prepared;
  const name = call.name as ToolName;
  op.showTool({ name, summary });
  showDetails(op);
  try {
    const timeoutMs = toolRunTimeoutMs(name, prepared.input, op.settings.toolTimeoutMs);
    const activityId = toolActivityId(call.id);
    const outcome = await sandbox.use(() => {
      op.countStep();
      return sandbox.route.call((taskQueue) => {
        const { runTool } = proxyActivities<HandsActivities>({
          ...toolActivityOptions(name, prepared.input, op.settings.toolTimeoutMs, checkpoint !== undefined),
          ...heartbeatOverride(op),
          taskQueue,
          activityId,
          summary,
        });
        const run = () =>
          runTool({
            // What the hands read absent (`RunToolInput`): the session and operation of an operation
            // that is a session of its own (the activity's workflow id), the call's id (its activity
            // id), the default time budget (or a helper's cap) and checkpoint excludes. Every step's
            // history holds this input.
            ...(op.operationId !== op.sessionId ? { sessionId: op.sessionId, operationId: op.operationId } : {}),
            name,
            input: prepared.input,
            ...(budgetGoesWithoutSaying(name, timeoutMs) ? {} : { timeoutMs }),
            // The hands read an absent policy as `none` (every step's history holds this input).
            ...(op.settings.egress !== 'none' ? { egress: op.settings.egress } : {}),
            ...(checkpoint ? { checkpoint } : {}),
          });
        const host = sandbox.route.host?.host;
        return stuckDetectionOn()
          ? watchActivity(op, { activityId, taskQueue, waitingOn: `tool ${summary}`, host }, run)
          : run();
      });
    });
    op.recordToolOutcome(call.id, outcome);
    if (checkpoint) recordCheckpointOfCall(op, checkpoint, outcome);
    const isError = outcome.isError === true;
    op.showTool({ name, summary, isError });
    return toolResult(call.id, outcome.content, isError);
  } catch (err) {
    if (isCancellation(err) || op.abortReason !== undefined) {
      op.noteCancelled();
      return toolResult(
        call.id,
        `interrupted: the operation was aborted (${op.abortReason}) while this call ran; its process was stopped. The workspace is preserved.`,
        true,
      );
    }
    // Retries exhausted or a non-retryable infrastructure failure: the model hears about it.
    op.showTool({ name, summary, isError: true });
    return toolResult(call.id, `tool infrastructure error: ${failureMessage(err)}`, true);
  }
}

function failureMessage(err: unknown): string {
  return err instanceof ActivityFailure && err.cause ? err.cause.message : (err as Error).message;
}
