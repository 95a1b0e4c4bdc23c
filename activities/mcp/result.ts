/**
 * An MCP tool result as the model reads it: its content blocks as text (images and audio named, not
 * inlined), masked of known secrets, long results cut to their head and tail with a note; and the
 * one-line summary recorded beside it.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MCP_RESULT_MAX_CHARS, type McpCallOutcome } from '../../common/mcp';
import type { SecretStore } from '../secrets/store';

export function mcpResultText(result: CallToolResult, secrets: SecretStore): McpCallOutcome {
  const blocks = result.content ?? [];
  const parts = blocks.map((block) => {
    switch (block.type) {
      case 'text':
        return block.text;
      case 'image':
      case 'audio':
        return `[${block.type} ${block.mimeType}, ${block.data.length} base64 characters, not shown]`;
      case 'resource_link':
        return `[resource link: ${block.uri}${block.name ? ` (${block.name})` : ''}]`;
      case 'resource':
        return 'text' in block.resource
          ? `[resource ${block.resource.uri}]\n${String(block.resource.text)}`
          : `[resource ${block.resource.uri}: binary, not shown]`;
      default:
        return `[${(block as { type: string }).type} content]`;
    }
  });
  if (parts.length === 0 && result.structuredContent !== undefined)
    parts.push(JSON.stringify(result.structuredContent));
  const full = secrets.mask(parts.join('\n'));
  const content = cut(full);
  const isError = result.isError === true;
  const summary = `${isError ? 'error' : 'ok'} · ${blocks.length} block${blocks.length === 1 ? '' : 's'} · ${full.length} chars${content.length < full.length ? ' (cut)' : ''}`;
  return { content: content || '(no content)', isError, summary };
}

function cut(text: string): string {
  if (text.length <= MCP_RESULT_MAX_CHARS) return text;
  const half = Math.floor(MCP_RESULT_MAX_CHARS / 2);
  return `${text.slice(0, half)}\n[… ${text.length - 2 * half} characters of the MCP result cut …]\n${text.slice(-half)}`;
}
