/** What a model reply says: its tool calls, its text, and the one-line outcome the next step's summary shows. */
import type { ModelStepResult } from '../../common/model-step';
import { totalTokens, type TextBlock, type ToolUseBlock } from '../../common/model-types';

export function toolCallsOf(reply: ModelStepResult): ToolUseBlock[] {
  return reply.message.content.filter((block): block is ToolUseBlock => block.type === 'tool_use');
}

/** The reply's text blocks, one per line. */
export function replyText(reply: ModelStepResult): string {
  return reply.message.content
    .filter((block): block is TextBlock => block.type === 'text')
    .map((block) => block.text)
    .join('\n')
    .trim();
}

/** What turn `turn` did: `turn 7 → bash, read_file · 12.4k tokens` or `turn 9 → end_turn`. */
export function turnOutcome(turn: number, reply: ModelStepResult): string {
  const tools = toolCallsOf(reply).map((block) => block.name);
  const what = tools.length ? [...new Set(tools)].join(', ') : (reply.stopReason ?? 'end_turn');
  return `turn ${turn} → ${what} · ${formatTokens(totalTokens(reply.usage))} tokens`;
}

export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(2)}M`;
}
