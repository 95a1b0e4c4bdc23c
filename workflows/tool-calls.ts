/**
 * The tool batch of one turn: each call the model asked for as its own activity on the hands queue
 * (id `tool-<toolCallId>`, summary `bash: npm test`). A call is prepared (validated against the
 * catalogue: an invalid call records no intent, the refusal is its result), executed, and turned
 * into the `tool_result` the model sees next. Calls run one after the other, in the model's order —
 * except a batch of only `safe` calls (reads, listings, searches: they change nothing, so their
 * order cannot matter), whose calls run at once. Results are always in the model's order. After an
 * abort the remaining calls are answered without running.
 */
import { ActivityFailure, isCancellation, patched, proxyActivities } from '@temporalio/workflow';
import type { HandsActivities } from '../common/hands';
import type { TailBlock } from '../common/model-step';
import type { ToolResultBlockParam, ToolUseBlock } from '../common/model-types';
import {
  replayPolicyOf,
  toolRunTimeoutMs,
  toolSummary,
  validateToolCall,
  type ToolInput,
  type ToolName,
} from '../common/tools';
import { heartbeatOverride, type OperationRun } from './operation-state';
import { toolActivityOptions } from './policies';
import type { OperationSandbox } from './sandbox';
import { stuckDetectionOn, watchActivity } from './stuck';
import { showDetails } from './visibility';

type PreparedCall =
  { ok: true; input: ToolInput<ToolName>; summary: string } | { ok: false; result: ToolResultBlockParam };

/** Histories recorded before safe batches ran in parallel ran every batch in order. */
export const PARALLEL_SAFE_BATCH_PATCH = 'parallel-safe-tool-batch';

export async function runToolBatch(
  op: OperationRun,
  sandbox: OperationSandbox,
  calls: ToolUseBlock[],
): Promise<TailBlock[]> {
  if (calls.length > 1 && calls.every((call) => replayPolicyOf(call.name) === 'safe')) {
    if (patched(PARALLEL_SAFE_BATCH_PATCH)) return runSafeBatch(op, sandbox, calls);
  }
  const results: TailBlock[] = [];
  for (const call of calls) results.push(await runOne(op, sandbox, call));
  return results;
}

/**
 * A batch of only `safe` calls: the workspace is made ready once (so no two calls provision it),
 * then every call runs at the same time.
 */
async function runSafeBatch(op: OperationRun, sandbox: OperationSandbox, calls: ToolUseBlock[]): Promise<TailBlock[]> {
  try {
    await sandbox.ready();
  } catch (err) {
    if (isCancellation(err) || op.abortReason !== undefined) op.abortReason ??= 'cancelled';
    const problem = `tool infrastructure error: ${failureMessage(err)}`;
    // No call ran: an invalid one still gets its refusal, the others the reason they did not run.
    return calls.map((call) => {
      const prepared = prepareToolCall(op, call);
      if (!prepared.ok) return prepared.result;
      if (op.abortReason !== undefined) return notRun(op, call);
      op.lastTool = { name: call.name, summary: prepared.summary, isError: true };
      return toolResult(call.id, problem, true);
    });
  }
  return Promise.all(calls.map((call) => runOne(op, sandbox, call)));
}

async function runOne(op: OperationRun, sandbox: OperationSandbox, call: ToolUseBlock): Promise<ToolResultBlockParam> {
  if (op.abortReason !== undefined) return notRun(op, call);
  const prepared = prepareToolCall(op, call);
  return prepared.ok ? executeToolCall(op, sandbox, call, prepared) : prepared.result;
}

const notRun = (op: OperationRun, call: ToolUseBlock): ToolResultBlockParam =>
  toolResult(call.id, `not run: the operation was aborted (${op.abortReason})`, true);

function prepareToolCall(op: OperationRun, call: ToolUseBlock): PreparedCall {
  const checked = validateToolCall(call.name, call.input);
  if (!checked.ok) {
    op.lastTool = { name: call.name, summary: `${call.name}: invalid arguments`, isError: true };
    return { ok: false, result: toolResult(call.id, checked.error, true) };
  }
  return { ok: true, input: checked.input, summary: toolSummary(call.name, checked.input) };
}

async function executeToolCall(
  op: OperationRun,
  sandbox: OperationSandbox,
  call: ToolUseBlock,
  prepared: Extract<PreparedCall, { ok: true }>,
): Promise<ToolResultBlockParam> {
  const { summary } = prepared;
  const name = call.name as ToolName;
  op.lastTool = { name, summary };
  showDetails(op);
  try {
    await sandbox.ready();
    const timeoutMs = toolRunTimeoutMs(name, prepared.input, op.settings.toolTimeoutMs);
    const activityId = `tool-${call.id}`;
    op.carry.steps += 1;
    const outcome = await sandbox.route.call((taskQueue) => {
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
    op.lastTool = { name, summary, isError: true };
    return toolResult(call.id, `tool infrastructure error: ${failureMessage(err)}`, true);
  }
}

function failureMessage(err: unknown): string {
  return err instanceof ActivityFailure && err.cause ? err.cause.message : (err as Error).message;
}

export function toolResult(toolCallId: string, content: string, isError: boolean): ToolResultBlockParam {
  return isError
    ? { type: 'tool_result', tool_use_id: toolCallId, content, is_error: true }
    : { type: 'tool_result', tool_use_id: toolCallId, content };
}
