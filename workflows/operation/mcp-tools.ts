/**
 * MCP tools in the operation (`common/mcp.ts`): the servers an operation names are listed once,
 * before its first model turn (activity `mcp-list`, on the brain's queue — the servers run on the
 * brain worker's host, never in the sandbox, and an MCP call needs no workspace); the catalogue is
 * kept in the carry, so neither a replay nor a continued run lists again. The model sees the tools
 * beside the harness's own (`mcpToolsOf`, sent with each model and compaction step). A call
 * (`runMcpToolCall`) is validated against the tool's schema (a mismatch is refused by name and
 * records no intent), checked against the approval policy (`*` rules), then runs as the activity
 * `mcp-<tool_use_id>`; a call that finally fails is a result the model reads, naming the failure.
 *
 * An operation without `mcpServers` schedules nothing here: its command sequence is unchanged.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  isCancellation,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import {
  checkMcpArguments,
  mcpCallSummary,
  mcpToolDefinitions,
  MCP_STARTUP_TIMEOUT_MAX_MS,
  type McpActivities,
  type McpToolDefinition,
} from '../../common/mcp';
import type { ToolResultBlockParam, ToolUseBlock } from '../../common/model-types';
import { awaitApproval, policyFor } from './approvals';
import { heartbeatOverride, OperationEnd, type OperationRun } from './state';
import { mcpCallActivityOptions, mcpListActivityOptions } from '../shared/policies';
import { stuckDetectionOn, watchActivity } from './stuck';
import { toolResult } from './tool-result';
import { showDetails } from './visibility';

export { isMcpToolName } from '../../common/mcp';

/** The activity id of the listing (one per operation). */
export const MCP_LIST_ACTIVITY_ID = 'mcp-list';

/**
 * Lists the tools of the operation's MCP servers, once per operation; how the operation ends when a
 * server cannot be listed (it failed to start, timed out, was refused), undefined otherwise.
 */
export async function listMcpTools(op: OperationRun): Promise<OperationEnd | undefined> {
  const servers = op.settings.mcpServers;
  if (!servers || Object.keys(servers).length === 0 || op.carry.mcp) return undefined;
  const names = Object.keys(servers);
  const { mcpListTools } = proxyActivities<McpActivities>({
    // A configured server's startup timeout is the worker's (at most the schema's maximum); the activity enforces it.
    ...mcpListActivityOptions(
      Object.values(servers).map((server) =>
        server.configured ? MCP_STARTUP_TIMEOUT_MAX_MS : server.startupTimeoutMs,
      ),
    ),
    ...heartbeatOverride(op),
    activityId: MCP_LIST_ACTIVITY_ID,
    summary: `list MCP tools: ${names.join(', ')}`.slice(0, 100),
  });
  const run = () => mcpListTools({ operationId: op.operationId, servers });
  const waitingOn = `MCP tool listing (${names.join(', ')})`;
  try {
    op.recordMcpTools(
      stuckDetectionOn()
        ? await watchActivity(
            op,
            { activityId: MCP_LIST_ACTIVITY_ID, taskQueue: workflowInfo().taskQueue, waitingOn },
            run,
          )
        : await run(),
    );
    return undefined;
  } catch (err) {
    if (isCancellation(err)) throw err;
    return new OperationEnd('failed', `MCP servers could not be listed${failureText(err)}`);
  }
}

/** The MCP tools the model and compaction steps offer beside the harness's own (none without servers). */
export function mcpToolsOf(op: OperationRun): { mcpTools?: McpToolDefinition[] } {
  const catalogue = op.carry.mcp;
  return catalogue && catalogue.tools.length > 0 ? { mcpTools: mcpToolDefinitions(catalogue) } : {};
}

/** One MCP tool call, from the model's `tool_use` to the `tool_result` it reads next. */
export async function runMcpToolCall(op: OperationRun, call: ToolUseBlock): Promise<ToolResultBlockParam> {
  const tools = op.carry.mcp?.tools ?? [];
  const entry = tools.find((tool) => tool.name === call.name);
  if (!entry) {
    op.showTool({ name: call.name, summary: `${call.name}: unknown tool`, isError: true });
    const available = tools.map((tool) => tool.name).join(', ') || 'none (this operation has no MCP servers)';
    return toolResult(call.id, `Unknown tool "${call.name}". Available MCP tools: ${available}.`, true);
  }
  const checked = checkMcpArguments(entry, call.input);
  if (!checked.ok) {
    op.showTool({ name: call.name, summary: `${call.name}: invalid arguments`, isError: true });
    return toolResult(call.id, checked.error, true);
  }
  const summary = mcpCallSummary(call.name, checked.input);
  const approval = policyFor(op, call.name, JSON.stringify(checked.input));
  if (approval.policy === 'deny') {
    op.showTool({ name: call.name, summary, isError: true });
    return toolResult(
      call.id,
      `denied: the operation's approval policy refuses this call (rule "${approval.rule ?? 'deny'}"). It was not run. Do not retry it; find another way or explain what you need.`,
      true,
    );
  }
  const refusal = approval.policy === 'ask' ? await awaitApproval(op, call, { summary, approval }) : undefined;
  if (refusal) return refusal;
  op.live.publish(op.carry.turn, { kind: 'tool.started', toolCallId: call.id, name: call.name, summary });
  op.showTool({ name: call.name, summary });
  showDetails(op);
  const config = op.settings.mcpServers![entry.server];
  const listed = op.carry.mcp?.servers.find((server) => server.server === entry.server);
  const activityId = `mcp-${call.id}`;
  const { mcpCallTool } = proxyActivities<McpActivities>({
    ...mcpCallActivityOptions(
      {
        timeoutMs: listed?.timeoutMs ?? config.timeoutMs,
        startupTimeoutMs: listed?.startupTimeoutMs ?? config.startupTimeoutMs,
      },
      entry.replayPolicy,
    ),
    ...heartbeatOverride(op),
    activityId,
    summary,
  });
  const run = () =>
    mcpCallTool({
      operationId: op.operationId,
      toolCallId: call.id,
      server: entry.server,
      config,
      tool: entry.tool,
      arguments: checked.input,
      replayPolicy: entry.replayPolicy,
    });
  op.countStep();
  try {
    const outcome = stuckDetectionOn()
      ? await watchActivity(op, { activityId, taskQueue: workflowInfo().taskQueue, waitingOn: `tool ${summary}` }, run)
      : await run();
    op.showTool({ name: call.name, summary, isError: outcome.isError });
    return toolResult(call.id, outcome.content, outcome.isError);
  } catch (err) {
    op.showTool({ name: call.name, summary, isError: true });
    if (isCancellation(err) || op.abortReason !== undefined) {
      op.noteCancelled();
      return toolResult(
        call.id,
        `interrupted: the operation was aborted (${op.abortReason}) while this MCP call ran; whether the server finished it is unknown.`,
        true,
      );
    }
    return toolResult(call.id, `MCP call failed${failureText(err)}. Nothing more is known of its effect.`, true);
  }
}

/** ` [Type]: message` of an activity's final failure. */
function failureText(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  const type = cause instanceof ApplicationFailure && cause.type ? ` [${cause.type}]` : '';
  return `${type}: ${cause instanceof Error ? cause.message : String(cause)}`;
}
