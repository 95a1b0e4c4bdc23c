/**
 * The baseline: a plain in-process agent loop with no durability. It calls the model through the
 * same `sendMessagesRequest` and client the brain uses, and runs tools through the same hands code
 * (`createHandsActivities` over `createSandboxes`, called directly instead of as an activity), so
 * the only difference from the harness is Temporal: no workflow, no activities, no history.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { MessageParam, ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages';
import type { HandsActivities } from '../common/hands';
import { sendMessagesRequest } from '../activities/model/messages-request';
import type { ModelSettings } from '../activities/model/settings';
import { DEFAULT_SYSTEM_PROMPT } from '../common/prompts';
import { toolDefinitions } from '../common/tools';

export interface PlainLoopOptions {
  client: Anthropic;
  settings: ModelSettings;
  hands: HandsActivities;
  sessionId: string;
  goal: string;
  maxTurns: number;
  /** `false`: no cache breakpoints (the naive loop). Default: the harness's breakpoints. */
  promptCache?: false;
  /** Per-call tool budget, as the operation's `toolTimeoutMs` (default 600 s, the operation's default). */
  toolTimeoutMs?: number;
  /** `max_tokens` per request, as the operation's `maxTokensPerTurn` (default 8192). */
  maxTokens?: number;
}

export interface PlainLoopResult {
  turns: number;
  toolCalls: number;
}

export async function runPlainLoop(options: PlainLoopOptions): Promise<PlainLoopResult> {
  const tools = toolDefinitions();
  const messages: MessageParam[] = [{ role: 'user', content: [{ type: 'text', text: options.goal }] }];
  let toolCalls = 0;
  for (let turn = 1; turn <= options.maxTurns; turn++) {
    const reply = await sendMessagesRequest({
      client: options.client,
      settings: options.settings,
      request: {
        system: DEFAULT_SYSTEM_PROMPT,
        tools,
        messages,
        maxTokens: options.maxTokens ?? 8192,
        ...(options.promptCache === false ? { promptCache: false as const } : {}),
      },
    });
    messages.push({ role: 'assistant', content: reply.message.content as Anthropic.ContentBlockParam[] });
    const calls = reply.message.content.filter((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use');
    if (calls.length === 0) return { turns: turn, toolCalls };
    const results: ToolResultBlockParam[] = [];
    for (const call of calls) {
      const outcome = await options.hands.runTool({
        sessionId: options.sessionId,
        toolCallId: call.id,
        name: call.name,
        input: call.input,
        timeoutMs: options.toolTimeoutMs ?? 600_000,
      });
      toolCalls += 1;
      results.push(
        outcome.isError
          ? { type: 'tool_result', tool_use_id: call.id, content: outcome.content, is_error: true }
          : { type: 'tool_result', tool_use_id: call.id, content: outcome.content },
      );
    }
    messages.push({ role: 'user', content: results });
  }
  return { turns: options.maxTurns, toolCalls };
}
