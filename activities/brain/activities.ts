/**
 * The brain's activities: the operation's model step and compaction step. Built by a factory that
 * receives its dependencies (the Anthropic client, the Temporal client used to read history, the
 * context cache).
 */
import type Anthropic from '@anthropic-ai/sdk';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { CompactContextInput, CompactContextResult } from '../../common/context';
import {
  recordedReply,
  type BrainActivities,
  fullModelStepInput,
  type ModelStepInput,
  type ModelStepResult,
} from '../../common/model-step';
import type { ContextFingerprint } from '../../common/context-fingerprint';
import type { ModelRequest } from '../../common/model-types';
import { toolDefinitions } from '../../common/tools';
import { crashPoint } from '../crash-points';
import { sendWithHeartbeats } from '../model/activity';
import type { ModelSettings } from '../model/settings';
import { COMPACTION_FAILURE_TYPES, estimatePromptTokens, summaryOf, summaryRequest } from './compaction';
import {
  compactedContext,
  describeFingerprint,
  emptyContext,
  fingerprintOf,
  matchesFingerprint,
  requestMessages,
  turnsToKeep,
  withClearedResults,
  withReply,
  type AssembledContext,
} from './context-assembly';
import { ContextCache, contextKey } from './context-cache';
import { rebuildContextFromHistory } from './history-context';
import { LiveText } from './live-text';

export interface BrainDependencies {
  anthropic: Anthropic;
  settings: ModelSettings;
  /** Reads the operation's history when the context cache is cold. */
  temporal: Client;
  cache: ContextCache;
}

export function createBrainActivities(deps: BrainDependencies): BrainActivities {
  const tools = toolDefinitions();
  return {
    modelStep: (input) => modelStep(deps, tools, input),
    compactContext: (input) => compactContext(deps, tools, input),
  };
}

/**
 * One model turn: the base context (edited by `clear`) plus the new tail, sent as one Messages API
 * request. The cache is updated only after the reply arrived, so a retried attempt sees the same
 * base.
 */
async function modelStep(
  deps: BrainDependencies,
  tools: Anthropic.Tool[],
  step: ModelStepInput,
): Promise<ModelStepResult> {
  const caller = Context.current().info.workflowExecution?.workflowId;
  if (step.operationId === undefined && !caller)
    throw ApplicationFailure.nonRetryable(
      'a model step without operationId must run as an activity of its operation',
      'ContextMismatch',
    );
  const input = fullModelStepInput(step, caller ?? '');
  const { context: base, rebuilt } = await baseContext(deps, input);
  const context = withClearedResults(base, input.clear);
  const request: ModelRequest = {
    system: context.system,
    tools: withMcpTools(tools, input.mcpTools),
    messages: requestMessages(context, input.tail),
    maxTokens: input.maxTokens,
    model: input.model,
    ...(input.editFrontier !== undefined ? { editFrontier: input.editFrontier } : {}),
    ...clearedFromOf(base, input.clear),
  };
  crashPoint(`model: before request (turn ${input.turn})`);
  const live = new LiveText({
    operationId: input.operationId,
    turn: input.turn,
    attempt: Context.current().info.attempt,
  });
  const reply = await sendWithHeartbeats({
    client: deps.anthropic,
    settings: deps.settings,
    request,
    onStreamEvent: live.onStreamEvent,
  }).finally(() => live.close());
  crashPoint(`model: after response (turn ${input.turn})`);
  deps.cache.set(contextKey(input.operationId, input.lane), withReply(context, input.tail, reply));
  return recordedReply(reply, rebuilt);
}

/**
 * One compaction: the summary call (the context as the model saw it, the pending tail, the
 * instruction), then the compacted context replaces the cached one. A retried attempt finds the
 * fingerprint of the context before and compacts it again; only a completed attempt is recorded,
 * so there is one summary.
 */
async function compactContext(
  deps: BrainDependencies,
  tools: Anthropic.Tool[],
  input: CompactContextInput,
): Promise<CompactContextResult> {
  const { context, rebuilt } = await baseContext(deps, input);
  const keep = turnsToKeep(context, input.keepTurns);
  if (!keep) {
    throw ApplicationFailure.nonRetryable(
      `nothing to compact: the context has ${context.messages.length} messages, the newest ${input.keepTurns} turns are kept`,
      COMPACTION_FAILURE_TYPES.nothingToCompact,
    );
  }
  const request = summaryRequest(context, input, withMcpTools(tools, input.mcpTools), keep.replaced);
  crashPoint(`model: before request (compaction ${input.compaction})`);
  const reply = await sendWithHeartbeats({ client: deps.anthropic, settings: deps.settings, request });
  crashPoint(`model: after response (compaction ${input.compaction})`);
  const { summary, truncated } = summaryOf(reply, input);
  const partial: CompactContextResult = {
    summary,
    truncated,
    system: context.system,
    retained: keep.retained,
    replacedMessages: keep.replaced,
    context: {
      messages: 1 + keep.retained.length,
      lastReplyId: context.lastReplyId,
      compactions: input.compaction,
      edits: context.edits,
    },
    tokensBefore: estimatePromptTokens(context.system, tools, context.messages),
    tokensAfter: 0,
    usage: reply.usage,
    ...(reply.failedAttemptsUsage ? { failedAttemptsUsage: reply.failedAttemptsUsage } : {}),
    requestId: reply.requestId,
    replyId: reply.message.id,
    model: reply.message.model,
    stopReason: reply.stopReason,
    rebuilt,
  };
  const compacted = compactedContext(input, partial);
  const result = { ...partial, tokensAfter: estimatePromptTokens(compacted.system, tools, compacted.messages) };
  deps.cache.set(contextKey(input.operationId, input.lane), compacted);
  return result;
}

/** The context the step's `base` fingerprint describes: from the cache, or rebuilt from history. */
async function baseContext(
  deps: BrainDependencies,
  input: { operationId: string; lane: string; base: ContextFingerprint; system?: string; continues?: string },
): Promise<{ context: AssembledContext; rebuilt: boolean }> {
  const key = contextKey(input.operationId, input.lane);
  // A lane's next operation starts from the previous one's context: its cached copy, if this worker has it.
  const candidates = [key, ...(input.continues ? [contextKey(input.continues, input.lane)] : [])];
  const cached = candidates
    .map((candidate) => deps.cache.get(candidate))
    .find((context) => context !== undefined && matchesFingerprint(context, input.base));
  if (cached) {
    deps.cache.stats.hits += 1;
    return { context: cached, rebuilt: false };
  }
  deps.cache.stats.misses += 1;
  if (input.base.messages === 0) {
    if (input.system === undefined) {
      throw ApplicationFailure.nonRetryable(
        'the first model step of an operation must carry the system prompt',
        'ContextMismatch',
      );
    }
    return { context: emptyContext(input.system), rebuilt: false };
  }
  const { workflowId, runId } = Context.current().info.workflowExecution ?? {};
  if (!workflowId || !runId)
    throw ApplicationFailure.nonRetryable(
      'context steps must run as activities of an operation workflow',
      'ContextMismatch',
    );
  const rebuilt = await rebuildContextFromHistory(deps.temporal, workflowId, runId);
  deps.cache.stats.rebuilds += 1;
  if (!matchesFingerprint(rebuilt, input.base)) {
    throw ApplicationFailure.nonRetryable(
      `context rebuilt from history has ${describeFingerprint(fingerprintOf(rebuilt))}, ` +
        `but the operation expects ${describeFingerprint(input.base)}`,
      'ContextMismatch',
    );
  }
  return { context: rebuilt, rebuilt: true };
}

/** The first tool result (in conversation order) that `clear` replaces in `base`, if any. */
function clearedFromOf(base: AssembledContext, clear: ModelStepInput['clear']): { clearedFrom?: string } {
  if (!clear) return {};
  const ids = new Set(clear.toolUseIds);
  for (const message of base.messages) {
    if (typeof message.content === 'string') continue;
    for (const block of message.content)
      if (block.type === 'tool_result' && ids.has(block.tool_use_id)) return { clearedFrom: block.tool_use_id };
  }
  return {};
}

/** The harness's tools, then the operation's MCP tools (`common/mcp.ts`) when it has any. */
function withMcpTools(tools: Anthropic.Tool[], mcpTools: ModelStepInput['mcpTools']): Anthropic.Tool[] {
  return mcpTools?.length ? [...tools, ...mcpTools] : tools;
}
