/**
 * Scripts for several conversations at once (lanes of a session run in parallel): each request is
 * answered by the conversation whose key appears in the latest user text block of the request that
 * names any key, at the turn given by the number of assistant messages since that user message.
 */
import { contentBlocks } from '../../scripted-model/prompt';
import type { ScriptFunction, ScriptedTurn } from '../../scripted-model/script';

export function conversations(turnsByKey: Record<string, ScriptedTurn[]>): ScriptFunction {
  const keys = Object.keys(turnsByKey);
  return (request) => {
    const messages = request.body.messages;
    for (let i = messages.length - 1; i >= 0; i--) {
      if (messages[i].role !== 'user') continue;
      // The last text block that names a key wins (a subagent's handoff quotes its parent's goal first).
      const texts = contentBlocks(messages[i].content)
        .filter((block) => block.type === 'text')
        .map((block) => String(block.text))
        .reverse();
      const key = texts.map((text) => keys.find((candidate) => text.includes(candidate))).find(Boolean);
      if (!key) continue;
      const turn = messages.slice(i).filter((message) => message.role === 'assistant').length;
      return turnsByKey[key][turn];
    }
    return undefined;
  };
}

/** Messages of a recorded request body. */
export interface RequestBody {
  system?: unknown;
  messages: Array<{
    role: string;
    content: Array<{
      type: string;
      id?: string;
      text?: string;
      tool_use_id?: string;
      content?: unknown;
      is_error?: boolean;
    }>;
  }>;
}
