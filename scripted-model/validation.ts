/**
 * Request validation like the Messages API's: the shape of the body (zod), then the rules that
 * relate blocks to each other — alternating roles starting with a user turn, every `tool_result`
 * answering a `tool_use` of the previous assistant turn and every `tool_use` answered in the next
 * user turn, unique tool names, at most 4 cache breakpoints, thinking passed back unchanged.
 * The first problem found becomes a 400 `invalid_request_error` whose message starts with the
 * offending path, as the API's do.
 */
import { z } from 'zod';
import { thinkingSignature } from './thinking';

const blockSchema = z.looseObject({ type: z.string() });
const cacheControlSchema = z.looseObject({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() });
const messageSchema = z.looseObject({
  role: z.enum(['user', 'assistant']),
  content: z.union([z.string(), z.array(blockSchema)]),
});
const toolSchema = z.looseObject({
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/, "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"),
  description: z.string().optional(),
  input_schema: z.looseObject({ type: z.literal('object') }),
  cache_control: cacheControlSchema.nullable().optional(),
});

const bodySchema = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().min(1),
  messages: z.array(messageSchema),
  system: z.union([z.string(), z.array(z.looseObject({ type: z.literal('text'), text: z.string() }))]).optional(),
  tools: z.array(toolSchema).optional(),
  tool_choice: z
    .discriminatedUnion('type', [
      z.looseObject({ type: z.literal('auto') }),
      z.looseObject({ type: z.literal('any') }),
      z.looseObject({ type: z.literal('none') }),
      z.looseObject({ type: z.literal('tool'), name: z.string() }),
    ])
    .optional(),
  thinking: z
    .discriminatedUnion('type', [
      z.looseObject({ type: z.literal('enabled'), budget_tokens: z.number().int().min(1024) }),
      z.looseObject({ type: z.literal('disabled') }),
      z.looseObject({ type: z.literal('adaptive') }),
    ])
    .optional(),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).max(1).optional(),
  stop_sequences: z.array(z.string()).optional(),
  metadata: z.looseObject({}).optional(),
  cache_control: cacheControlSchema.nullable().optional(),
});

export type MessagesRequestBody = z.infer<typeof bodySchema>;
type Block = z.infer<typeof blockSchema>;

export const MAX_CACHE_BREAKPOINTS = 4;

const USER_BLOCKS = new Set(['text', 'image', 'document', 'search_result', 'tool_result']);
const ASSISTANT_BLOCKS = new Set([
  'text',
  'thinking',
  'redacted_thinking',
  'tool_use',
  'server_tool_use',
  'web_search_tool_result',
]);

export type RequestValidation = { ok: true; body: MessagesRequestBody } | { ok: false; message: string };

export function validateMessagesRequest(raw: unknown): RequestValidation {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return { ok: false, message: 'request body must be a JSON object' };
  const parsed = bodySchema.safeParse(raw, {
    error: (issue) => (issue.input === undefined ? 'Field required' : undefined),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, message: `${issue.path.join('.') || 'body'}: ${issue.message}` };
  }
  const problem = relationalProblem(parsed.data);
  return problem ? { ok: false, message: problem } : { ok: true, body: parsed.data };
}

function blocksOf(content: string | Block[]): Block[] {
  return typeof content === 'string' ? [] : content;
}

function relationalProblem(body: MessagesRequestBody): string | null {
  const { messages } = body;
  if (messages.length === 0) return 'messages: at least one message is required';
  if (messages[0]!.role !== 'user') return 'messages: first message must use the "user" role';

  for (let i = 1; i < messages.length; i++) {
    if (messages[i]!.role === messages[i - 1]!.role) {
      return `messages: roles must alternate between "user" and "assistant", but found multiple "${messages[i]!.role}" roles in a row`;
    }
  }

  const toolNames = new Set<string>();
  for (const tool of body.tools ?? []) {
    if (toolNames.has(tool.name)) return 'tools: Tool names must be unique.';
    toolNames.add(tool.name);
  }
  if (body.tool_choice?.type === 'tool' && !toolNames.has(String(body.tool_choice.name))) {
    return `tool_choice.name: Tool '${String(body.tool_choice.name)}' not found in provided tools`;
  }
  if (body.thinking?.type === 'enabled' && Number(body.thinking.budget_tokens) >= body.max_tokens) {
    return '`max_tokens` must be greater than `thinking.budget_tokens`';
  }

  const seenToolUseIds = new Set<string>();
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    const allowed = message.role === 'user' ? USER_BLOCKS : ASSISTANT_BLOCKS;
    if (typeof message.content === 'string' && message.content.length === 0 && i < messages.length - 1) {
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    }
    const blocks = blocksOf(message.content);
    for (let j = 0; j < blocks.length; j++) {
      const block = blocks[j]!;
      const path = `messages.${i}.content.${j}`;
      if (!allowed.has(block.type)) {
        return `${path}: \`${block.type}\` blocks are not permitted in \`${message.role}\` messages`;
      }
      const problem = blockProblem(block, path, seenToolUseIds);
      if (problem) return problem;
    }

    if (message.role === 'user' && i > 0) {
      const asked = toolUseIds(messages[i - 1]!.content);
      for (let j = 0; j < blocks.length; j++) {
        const block = blocks[j]!;
        if (block.type === 'tool_result' && !asked.includes(String(block.tool_use_id))) {
          return (
            `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. ` +
            'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.'
          );
        }
      }
    }
    if (message.role === 'assistant' && i < messages.length - 1) {
      const answered = new Set(
        blocksOf(messages[i + 1]!.content)
          .filter((b) => b.type === 'tool_result')
          .map((b) => String(b.tool_use_id)),
      );
      const unanswered = toolUseIds(message.content).filter((id) => !answered.has(id));
      if (unanswered.length > 0) {
        return (
          `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unanswered.join(', ')}. ` +
          'Each `tool_use` block must have a corresponding `tool_result` block in the next message.'
        );
      }
    }
  }

  const breakpoints = countBreakpoints(body);
  if (breakpoints > MAX_CACHE_BREAKPOINTS) {
    return `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${breakpoints}.`;
  }
  return null;
}

function blockProblem(block: Block, path: string, seenToolUseIds: Set<string>): string | null {
  switch (block.type) {
    case 'text':
      if (typeof block.text !== 'string') return `${path}.text: Field required`;
      if (block.text.length === 0) return `${path}: text content blocks must be non-empty`;
      break;
    case 'tool_use': {
      if (typeof block.id !== 'string') return `${path}.id: Field required`;
      if (typeof block.name !== 'string') return `${path}.name: Field required`;
      if (typeof block.input !== 'object' || block.input === null || Array.isArray(block.input))
        return `${path}.input: Input should be a valid dictionary`;
      if (seenToolUseIds.has(block.id)) return `${path}: \`tool_use\` ids must be unique`;
      seenToolUseIds.add(block.id);
      break;
    }
    case 'tool_result':
      if (typeof block.tool_use_id !== 'string') return `${path}.tool_use_id: Field required`;
      break;
    case 'thinking':
      if (typeof block.thinking !== 'string') return `${path}.thinking: Field required`;
      if (typeof block.signature !== 'string') return `${path}.signature: Field required`;
      if (block.signature !== thinkingSignature(block.thinking))
        return `${path}: Invalid \`signature\` in \`thinking\` block`;
      if (block.cache_control != null) return `${path}.thinking.cache_control: Extra inputs are not permitted`;
      break;
    case 'redacted_thinking':
      if (typeof block.data !== 'string') return `${path}.data: Field required`;
      if (block.cache_control != null) return `${path}.redacted_thinking.cache_control: Extra inputs are not permitted`;
      break;
  }
  if (block.cache_control != null) {
    const control = cacheControlSchema.safeParse(block.cache_control);
    if (!control.success) return `${path}.cache_control: Input should be {"type": "ephemeral", "ttl"?: "5m" | "1h"}`;
  }
  return null;
}

function toolUseIds(content: string | Block[]): string[] {
  return blocksOf(content)
    .filter((block) => block.type === 'tool_use')
    .map((block) => String(block.id));
}

function countBreakpoints(body: MessagesRequestBody): number {
  const marked = (value: Record<string, unknown>): number => (value.cache_control != null ? 1 : 0);
  let count = marked(body);
  for (const tool of body.tools ?? []) count += marked(tool);
  if (Array.isArray(body.system)) for (const block of body.system) count += marked(block);
  for (const message of body.messages) for (const block of blocksOf(message.content)) count += marked(block);
  return count;
}
