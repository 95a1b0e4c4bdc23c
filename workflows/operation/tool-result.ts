/** The `tool_result` block the model sees for a call. */
import type { ToolResultBlockParam } from '../../common/model-types';

export function toolResult(toolCallId: string, content: string, isError: boolean): ToolResultBlockParam {
  return isError
    ? { type: 'tool_result', tool_use_id: toolCallId, content, is_error: true }
    : { type: 'tool_result', tool_use_id: toolCallId, content };
}
