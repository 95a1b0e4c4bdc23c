/**
 * The brain's activities: the operation's model step. Built by a factory that receives its
 * dependencies (the Anthropic client, the Temporal client used to read history, the context cache).
 */
import type Anthropic from '@anthropic-ai/sdk';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { BrainActivities, ModelStepInput, ModelStepResult } from '../../common/model-step';
import type { ModelRequest } from '../../common/model-types';
import { toolDefinitions } from '../../common/tools';
import { crashPoint } from '../crash-points';
import { sendWithHeartbeats } from '../model/activity';
import type { ModelSettings } from '../model/settings';
import { AssembledContext, ContextCache, contextKey } from './context-cache';
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

  /** The context the step's `base` fingerprint describes: from the cache, or rebuilt from history. */
  async function baseContext(input: ModelStepInput): Promise<{ context: AssembledContext; rebuilt: boolean }> {
    const key = contextKey(input.operationId, input.lane);
    // A lane's next operation starts from the previous one's context: its cached copy, if this worker has it.
    const cached =
      deps.cache.get(key) ?? (input.continues ? deps.cache.get(contextKey(input.continues, input.lane)) : undefined);
    if (cached && cached.messages.length === input.base.messages && cached.lastReplyId === input.base.lastReplyId) {
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
      return { context: { system: input.system, messages: [], lastReplyId: null }, rebuilt: false };
    }
    const { workflowId, runId } = Context.current().info.workflowExecution ?? {};
    if (!workflowId || !runId)
      throw ApplicationFailure.nonRetryable(
        'modelStep must run as an activity of an operation workflow',
        'ContextMismatch',
      );
    const rebuilt = await rebuildContextFromHistory(deps.temporal, workflowId, runId, {
      continues: input.continues,
      base: input.base,
    });
    deps.cache.stats.rebuilds += 1;
    if (rebuilt.messages.length !== input.base.messages || rebuilt.lastReplyId !== input.base.lastReplyId) {
      throw ApplicationFailure.nonRetryable(
        `context rebuilt from history has ${rebuilt.messages.length} messages ending at ${rebuilt.lastReplyId}, ` +
          `but the operation expects ${input.base.messages} ending at ${input.base.lastReplyId}`,
        'ContextMismatch',
      );
    }
    return { context: rebuilt, rebuilt: true };
  }

  return {
    /**
     * One model turn: the base context plus the new tail, sent as one Messages API request. The
     * cache is updated only after the reply arrived, so a retried attempt sees the same base.
     */
    async modelStep(input: ModelStepInput): Promise<ModelStepResult> {
      const { context, rebuilt } = await baseContext(input);
      const messages: Anthropic.MessageParam[] = [...context.messages, { role: 'user', content: input.tail }];
      const request: ModelRequest = {
        system: context.system,
        tools,
        messages,
        maxTokens: input.maxTokens,
        model: input.model,
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
      deps.cache.set(contextKey(input.operationId, input.lane), {
        system: context.system,
        messages: [...messages, { role: 'assistant', content: reply.message.content as Anthropic.ContentBlockParam[] }],
        lastReplyId: reply.message.id,
      });
      return { ...reply, rebuilt };
    },
  };
}
