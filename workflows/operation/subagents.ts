/**
 * The `task` tool: forks a subagent lane (`subagent:<toolCallId>`) from the operation's lane and runs
 * an operation there as a child workflow (id `<operationId>.<toolCallId>`), whose final text is the
 * call's result. The subagent starts from a fresh context: a short handoff (where the task comes
 * from) and the prompt — never the parent's transcript. It shares the session's workspace (under the
 * session's sandbox lease when there is a session), inherits the parent's model, approval policy,
 * tool hooks (PreToolUse, PostToolUse) and limits, and its tokens are added to the parent's ledger. Depth and count are limited
 * (`subagents.maxDepth`, `subagents.maxPerOperation`).
 */
import { executeChild, getExternalWorkflowHandle, isCancellation } from '@temporalio/workflow';
import { toolHooksOf } from '../../common/hooks';
import { DEFAULT_CHECKPOINT_EXCLUDE } from '../../common/checkpoints';
import { forkEndedSignal, laneForkedSignal, subagentLaneOf, subagentOperationIdOf } from '../../common/lanes';
import { totalTokens, type ToolResultBlockParam, type ToolUseBlock } from '../../common/model-types';
import { OPERATION_WORKFLOW_TYPE, type OperationInput, type OperationResult } from '../../common/operation';
import { SUBAGENT_SYSTEM_PROMPT, subagentHandoff } from '../../common/prompts';
import type { TaskInput } from '../../common/tools';
import { timeLeftMs } from './budget';
import { childFailureMessage, resultOfFailedOperation } from '../shared/child-operation';
import type { OperationRun } from './state';
import { toolResult } from './tool-result';
import { showDetails } from './visibility';

export async function runSubagent(
  op: OperationRun,
  call: ToolUseBlock,
  task: TaskInput,
): Promise<ToolResultBlockParam> {
  const refusal = limitRefusal(op);
  if (refusal) return toolResult(call.id, refusal, true);
  op.startSubagent();
  const lane = subagentLaneOf(call.id);
  const operationId = subagentOperationIdOf(op.operationId, call.id);
  op.showTool({ name: call.name, summary: `task: ${task.description}` });
  showDetails(op);
  notifySession(op, (session) =>
    session.signal(laneForkedSignal, {
      lane,
      operationId,
      parentOperationId: op.operationId,
      parentLane: op.settings.lane,
      toolCallId: call.id,
      description: task.description,
    }),
  );
  let result: OperationResult | undefined;
  let failure: string | undefined;
  try {
    op.countStep();
    result = await executeChild<(input: OperationInput) => Promise<OperationResult>>(OPERATION_WORKFLOW_TYPE, {
      workflowId: operationId,
      args: [subagentInput(op, call, task, lane)],
      staticSummary: `subagent: ${task.description}`.slice(0, 200),
    });
  } catch (err) {
    result = resultOfFailedOperation(err);
    if (!result) {
      if (isCancellation(err) || op.abortReason !== undefined) op.noteCancelled();
      failure =
        op.abortReason !== undefined ? `the operation was aborted (${op.abortReason})` : childFailureMessage(err);
    }
  }
  // Its usage is the parent's; a host it claimed first is where the parent's next hands calls go.
  if (result) op.recordSubagentResult(result);
  notifySession(op, (session) =>
    session.signal(forkEndedSignal, {
      operationId,
      state: result?.state ?? 'failed',
      reason: result?.reason ?? failure ?? 'unknown',
    }),
  );
  const isError = !result || result.state !== 'completed';
  op.showTool({ name: call.name, summary: `task: ${task.description}`, isError });
  if (!result) return toolResult(call.id, `the subagent did not finish: ${failure}`, true);
  if (!isError) return toolResult(call.id, result.finalText || '(the subagent ended without a final message)', false);
  return toolResult(
    call.id,
    `the subagent ended ${result.state} (${result.reason}) after ${result.turns} turns.` +
      (result.finalText ? ` Its last message:\n${result.finalText}` : ''),
    true,
  );
}

function limitRefusal(op: OperationRun): string | undefined {
  const { maxDepth, maxPerOperation } = op.settings.subagents;
  const depth = op.settings.lineage?.depth ?? 0;
  if (depth >= maxDepth) {
    return `not run: subagents may nest at most ${maxDepth} deep and this operation is at depth ${depth}. Do this task yourself.`;
  }
  const used = op.carry.subagents ?? 0;
  if (used >= maxPerOperation) {
    return `not run: this operation has already started ${used} subagents, the most it may start. Do this task yourself.`;
  }
  return undefined;
}

function subagentInput(op: OperationRun, call: ToolUseBlock, task: TaskInput, lane: string): OperationInput {
  const { settings, carry } = op;
  // hooks: a subagent keeps the rules on tool calls; the conversation's own (start, stop) are the parent's.
  const hooks = toolHooksOf(settings.hooks);
  const { maxTotalTokens } = settings.budget;
  const remainingMs = timeLeftMs(op);
  return {
    goal: task.prompt,
    notes: [
      subagentHandoff({
        parentLane: settings.lane,
        parentOperationId: op.operationId,
        parentGoal: settings.goal,
        description: task.description,
      }),
    ],
    sessionId: op.sessionId,
    lane,
    system: SUBAGENT_SYSTEM_PROMPT,
    maxTokensPerTurn: settings.maxTokensPerTurn,
    // The subagent spends from the parent's budget: what is left of its tokens and time.
    budget: {
      maxTurns: settings.budget.maxTurns,
      ...(maxTotalTokens !== undefined
        ? { maxTotalTokens: Math.max(1, maxTotalTokens - totalTokens(carry.usage)) }
        : {}),
      ...(remainingMs !== undefined ? { maxDurationMs: Math.max(1, Math.floor(remainingMs)) } : {}),
    },
    handsTaskQueue: op.handsQueue,
    toolTimeoutMs: settings.toolTimeoutMs,
    egress: settings.egress,
    approvalTimeoutMs: settings.approvalTimeoutMs,
    subagents: settings.subagents,
    context: settings.context,
    stuck: settings.stuck,
    // The parent's workspace is on this host (a session's lease says so too).
    ...(carry.handsHost ? { handsHost: carry.handsHost } : {}),
    lineage: {
      depth: (settings.lineage?.depth ?? 0) + 1,
      parentOperationId: op.operationId,
      parentLane: settings.lane,
      toolCallId: call.id,
    },
    ...(settings.repo ? { repo: settings.repo } : {}),
    ...(settings.environment !== undefined ? { environment: settings.environment } : {}),
    ...(settings.model ? { model: settings.model } : {}),
    ...(settings.approvals ? { approvals: settings.approvals } : {}),
    ...(hooks ? { hooks } : {}),
    ...(settings.heartbeatTimeoutMs ? { heartbeatTimeoutMs: settings.heartbeatTimeoutMs } : {}),
    ...(settings.session ? { session: settings.session } : {}),
    // The same MCP servers (the subagent lists them itself: its own operation).
    ...(settings.mcpServers ? { mcpServers: settings.mcpServers } : {}),
    // The same checkpoints, when the operation chose other than the defaults.
    ...(ownCheckpointSettings(settings) ? { checkpoints: settings.checkpoints } : {}),
  };
}

function ownCheckpointSettings({ checkpoints }: OperationRun['settings']): boolean {
  return !checkpoints.enabled || JSON.stringify(checkpoints.exclude) !== JSON.stringify(DEFAULT_CHECKPOINT_EXCLUDE);
}

/** Tells the session (if the operation has one) about a forked lane; a session that is gone is ignored. */
export function notifySession(
  op: OperationRun,
  send: (session: ReturnType<typeof getExternalWorkflowHandle>) => Promise<void>,
): void {
  if (!op.settings.session) return;
  send(getExternalWorkflowHandle(op.settings.session.workflowId)).catch(() => undefined);
}
