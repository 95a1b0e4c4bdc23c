/**
 * A deterministic token estimate, so scripted runs have exact, hand-computable usage: one token per
 * started 4 characters of the text a block carries. No per-message or per-request overhead.
 *
 * | block / part            | text counted                                   |
 * |-------------------------|------------------------------------------------|
 * | tool definition         | name + description + JSON of `input_schema`    |
 * | system / text           | `text`                                         |
 * | tool_use                | name + JSON of `input`                         |
 * | tool_result             | its string content, or its inner blocks summed |
 * | thinking                | `thinking`; redacted_thinking: `data`          |
 * | image / document (file) | a flat 1,000 tokens                            |
 * | anything else           | its JSON                                       |
 */
export const CHARS_PER_TOKEN = 4;
export const MEDIA_BLOCK_TOKENS = 1000;

export function textTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

type Json = Record<string, unknown>;

export function toolTokens(tool: Json): number {
  const description = typeof tool.description === 'string' ? tool.description : '';
  return textTokens(String(tool.name ?? '') + description + JSON.stringify(tool.input_schema ?? {}));
}

export function blockTokens(block: Json): number {
  switch (block.type) {
    case 'text':
      return textTokens(String(block.text ?? ''));
    case 'tool_use':
    case 'server_tool_use':
      return textTokens(String(block.name ?? '') + JSON.stringify(block.input ?? {}));
    case 'tool_result': {
      const content = block.content;
      if (content === undefined) return 0;
      if (typeof content === 'string') return textTokens(content);
      if (Array.isArray(content)) return content.reduce((sum: number, inner) => sum + blockTokens(inner as Json), 0);
      return textTokens(JSON.stringify(content));
    }
    case 'thinking':
      return textTokens(String(block.thinking ?? ''));
    case 'redacted_thinking':
      return textTokens(String(block.data ?? ''));
    case 'image':
      return MEDIA_BLOCK_TOKENS;
    case 'document': {
      const source = block.source as Json | undefined;
      return source?.type === 'text' ? textTokens(String(source.data ?? '')) : MEDIA_BLOCK_TOKENS;
    }
    default: {
      const { cache_control: _ignored, ...rest } = block;
      return textTokens(JSON.stringify(rest));
    }
  }
}
