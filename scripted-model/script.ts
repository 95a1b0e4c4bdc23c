/**
 * Scripts: what the scripted model answers, turn by turn. Each request the server accepts consumes
 * the next turn, faults included, so `[{ fault: { type: 'overloaded' } }, { text: 'done' }]` is
 * "fail once, then answer". A script is an array of turns or a function of the request; a turn may
 * itself be computed from the request (`respond`) or check it (`expect`). When a request arrives
 * and there is no turn for it, or a check throws, the server answers 400 and records a script
 * error: a run that goes off-script fails loudly.
 */
import { z } from 'zod';
import { contentBlocks } from './prompt';
import type { MessagesRequestBody } from './validation';

export const STOP_REASONS = [
  'end_turn',
  'max_tokens',
  'stop_sequence',
  'tool_use',
  'pause_turn',
  'refusal',
  'model_context_window_exceeded',
] as const;
export type ScriptedStopReason = (typeof STOP_REASONS)[number];

export const API_ERROR_TYPES = [
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'rate_limit_error',
  'api_error',
  'overloaded_error',
] as const;
export type ApiErrorType = (typeof API_ERROR_TYPES)[number];

export interface ScriptedToolCall {
  name: string;
  input: Record<string, unknown>;
  /** Defaults to the next `toolu_<n>` of the server (deterministic for a given run). */
  id?: string;
}

/** A fault injected instead of (or into) the turn's answer. */
export type ScriptedFault =
  /** 429 `rate_limit_error` with `retry-after` (whole seconds, default 1) and, if given, `retry-after-ms`. */
  | { type: 'rate_limit'; retryAfterSeconds?: number; retryAfterMs?: number }
  /** 529 `overloaded_error`. */
  | { type: 'overloaded' }
  /** 500/502/503/504 `api_error` (default 500). */
  | { type: 'server_error'; status?: 500 | 502 | 503 | 504 }
  /** Any status with the API's error body, e.g. 401 `authentication_error`. */
  | { type: 'http_error'; status: number; errorType: ApiErrorType; message?: string }
  /** HTTP 200, then an `event: error` after `afterBlocks` content blocks (default 0); streaming only. */
  | { type: 'stream_error'; afterBlocks?: number; errorType?: 'overloaded_error' | 'api_error' }
  /** The socket is destroyed: before any response, or after `afterBlocks` blocks of a stream. */
  | { type: 'drop_connection'; afterBlocks?: number }
  /** The stream pauses `ms` after `afterBlocks` blocks (default 0), then carries on. */
  | { type: 'stall'; ms: number; afterBlocks?: number }
  /** The answer is cut after `outputTokens` tokens with stop reason `max_tokens` (as if `max_tokens` were hit). */
  | { type: 'cut_at_max_tokens'; outputTokens: number }
  /**
   * The turn's tool calls violate the tool's `input_schema`: an invented field next to a real one
   * (`oldText` → `oldText2`, the default), a required field left out, or a field of the wrong type.
   */
  | { type: 'malformed_tool_call'; mutation?: 'invented_field' | 'missing_required' | 'wrong_type' };

export interface ScriptedTurn {
  /** Shown in script errors ("turn 3 (read the file)"). */
  label?: string;
  /** A thinking block first (the request must enable thinking); its signature is deterministic. */
  thinking?: string;
  text?: string;
  toolCalls?: ScriptedToolCall[];
  /** Default: `tool_use` when there are tool calls, else `end_turn`. */
  stopReason?: ScriptedStopReason;
  fault?: ScriptedFault;
  /** Delay before the response starts. */
  latencyMs?: number;
  /** Delay between stream events. */
  eventDelayMs?: number;
  /**
   * Holds the stream after its `count`-th content delta until `until` settles: a test that must see
   * the answer while it streams releases it once it has, instead of racing a delay.
   */
  hold?: { afterDeltas: number; until: Promise<unknown> };
  /** Checks the request before answering; throw (e.g. a jest `expect`) to mark the run off-script. */
  expect?: (request: ScriptedRequest) => void;
  /**
   * Computes the answer from the request (e.g. from the last tool result); its result is the turn.
   * A test that acts before answering (kills a container, say) returns a promise: the server runs
   * in the test's process beside its worker, whose heartbeats a blocking call would hold up.
   */
  respond?: (request: ScriptedRequest) => ScriptedTurn | Promise<ScriptedTurn>;
}

export type ScriptFunction = (request: ScriptedRequest) => ScriptedTurn | undefined;
/** Turns in order, or a function of each request (return undefined when the script is over). */
export type ModelScript = readonly ScriptedTurn[] | ScriptFunction;

export interface ScriptedToolResult {
  toolCallId: string;
  /** The tool that was called, from the previous assistant turn. */
  toolName: string | null;
  /** Text of the result (inner text blocks joined with newlines). */
  content: string;
  isError: boolean;
}

/** What a script sees of a request. */
export interface ScriptedRequest {
  /** 0-based index of this request among all the server received. */
  requestIndex: number;
  /** 0-based index of the turn this request consumes. */
  turnIndex: number;
  body: MessagesRequestBody;
  /** Tool results in the last user message. */
  toolResults: ScriptedToolResult[];
  /** Text blocks of the last user message, joined with newlines. */
  lastUserText: string;
}

export function scriptedRequest(body: MessagesRequestBody, requestIndex: number, turnIndex: number): ScriptedRequest {
  const messages = body.messages;
  const last = messages[messages.length - 1];
  const lastBlocks = last && last.role === 'user' ? contentBlocks(last.content) : [];
  const previous = messages[messages.length - 2];
  const toolNames = new Map<string, string>();
  if (previous) {
    for (const block of contentBlocks(previous.content)) {
      if (block.type === 'tool_use') toolNames.set(String(block.id), String(block.name));
    }
  }
  return {
    requestIndex,
    turnIndex,
    body,
    toolResults: lastBlocks
      .filter((block) => block.type === 'tool_result')
      .map((block) => ({
        toolCallId: String(block.tool_use_id),
        toolName: toolNames.get(String(block.tool_use_id)) ?? null,
        content: resultText(block.content),
        isError: block.is_error === true,
      })),
    lastUserText: lastBlocks
      .filter((block) => block.type === 'text')
      .map((block) => String(block.text))
      .join('\n'),
  };
}

function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  return contentBlocks(content)
    .filter((block) => block.type === 'text')
    .map((block) => String(block.text))
    .join('\n');
}

const faultSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('rate_limit'),
    retryAfterSeconds: z.number().nonnegative().optional(),
    retryAfterMs: z.number().nonnegative().optional(),
  }),
  z.strictObject({ type: z.literal('overloaded') }),
  z.strictObject({
    type: z.literal('server_error'),
    status: z.union([z.literal(500), z.literal(502), z.literal(503), z.literal(504)]).optional(),
  }),
  z.strictObject({
    type: z.literal('http_error'),
    status: z.number().int().min(400).max(599),
    errorType: z.enum(API_ERROR_TYPES),
    message: z.string().optional(),
  }),
  z.strictObject({
    type: z.literal('stream_error'),
    afterBlocks: z.number().int().nonnegative().optional(),
    errorType: z.enum(['overloaded_error', 'api_error']).optional(),
  }),
  z.strictObject({ type: z.literal('drop_connection'), afterBlocks: z.number().int().nonnegative().optional() }),
  z.strictObject({
    type: z.literal('stall'),
    ms: z.number().nonnegative(),
    afterBlocks: z.number().int().nonnegative().optional(),
  }),
  z.strictObject({ type: z.literal('cut_at_max_tokens'), outputTokens: z.number().int().positive() }),
  z.strictObject({
    type: z.literal('malformed_tool_call'),
    mutation: z.enum(['invented_field', 'missing_required', 'wrong_type']).optional(),
  }),
]);

const turnSchema = z.strictObject({
  label: z.string().optional(),
  thinking: z.string().optional(),
  text: z.string().optional(),
  toolCalls: z
    .array(z.strictObject({ name: z.string(), input: z.record(z.string(), z.unknown()), id: z.string().optional() }))
    .optional(),
  stopReason: z.enum(STOP_REASONS).optional(),
  fault: faultSchema.optional(),
  latencyMs: z.number().nonnegative().optional(),
  eventDelayMs: z.number().nonnegative().optional(),
});

/** A script from JSON (an array of turns; functions cannot be written in JSON). */
export function parseScriptJson(value: unknown): ScriptedTurn[] {
  const parsed = z.array(turnSchema).safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`invalid script at ${issue.path.join('.') || 'top level'}: ${issue.message}`);
  }
  return parsed.data;
}
