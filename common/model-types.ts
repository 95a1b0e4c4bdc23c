/**
 * The model boundary's contract: what a model call takes, what it returns, and how it fails.
 *
 * Deterministic and type-only towards the SDK: workflow code imports this file (the policy preset,
 * the ledger), so it holds plain data types, constants and pure helpers only.
 */
import type {
  ContentBlock,
  ContentBlockParam,
  MessageParam,
  StopReason,
  TextBlock,
  TextBlockParam,
  ThinkingConfigParam,
  Tool,
  ToolChoice,
  ToolResultBlockParam,
  ToolUseBlock,
} from '@anthropic-ai/sdk/resources/messages';

/** Messages API block types the workflows handle (re-exported so workflow code imports only `common/`). */
export type { ContentBlockParam, MessageParam, TextBlock, TextBlockParam, ToolResultBlockParam, ToolUseBlock };

/**
 * Tokens one request consumed, in the API's four billing classes. The prompt of a request is
 * `input + cacheWrite + cacheRead`; `input` is the uncached part only.
 */
export interface TokenUsage {
  /** Prompt tokens neither read from nor written to the prompt cache (`input_tokens`). */
  input: number;
  /** Prompt tokens written to the prompt cache (`cache_creation_input_tokens`), both TTLs. */
  cacheWrite: number;
  /**
   * The part of `cacheWrite` written with the 1-hour TTL (`cache_creation.ephemeral_1h_input_tokens`,
   * priced 2× base input instead of 1.25×); the rest was written for 5 minutes. Absent when zero.
   */
  cacheWrite1h?: number;
  /** Prompt tokens read from the prompt cache (`cache_read_input_tokens`). */
  cacheRead: number;
  /** Generated tokens, thinking included (`output_tokens`). */
  output: number;
}

export const ZERO_USAGE: TokenUsage = Object.freeze({ input: 0, cacheWrite: 0, cacheRead: 0, output: 0 });

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  const sum: TokenUsage = {
    input: a.input + b.input,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    cacheRead: a.cacheRead + b.cacheRead,
    output: a.output + b.output,
  };
  const oneHour = (a.cacheWrite1h ?? 0) + (b.cacheWrite1h ?? 0);
  if (oneHour > 0) sum.cacheWrite1h = oneHour;
  return sum;
}

/** Prompt tokens of the request(s): uncached + cache write + cache read. */
export function promptTokens(usage: TokenUsage): number {
  return usage.input + usage.cacheWrite + usage.cacheRead;
}

/** All four classes added up: the figure the `AgentTokens` search attribute shows. */
export function totalTokens(usage: TokenUsage): number {
  return usage.input + usage.cacheWrite + usage.cacheRead + usage.output;
}

export function isZeroUsage(usage: TokenUsage): boolean {
  return totalTokens(usage) === 0;
}

/** How long cache entries written by a request live: the API's two ephemeral TTLs. */
export type PromptCacheTtl = '5m' | '1h';

/**
 * One model request, as the harness assembles it. Field names follow the harness (camelCase);
 * block contents are Messages API params, passed through untouched.
 */
export interface ModelRequest {
  /** The system prompt. */
  system?: string | TextBlockParam[];
  /** Tool definitions, in a stable order (the order is part of the cached prefix). */
  tools?: Tool[];
  toolChoice?: ToolChoice;
  /** The conversation: alternating user/assistant turns, starting with a user turn. */
  messages: MessageParam[];
  /** Defaults to the configured `AGENT_MAX_TOKENS`. */
  maxTokens?: number;
  /** Defaults to the configured `AGENT_MODEL`. */
  model?: string;
  thinking?: ThinkingConfigParam;
  stopSequences?: string[];
  /**
   * Prompt caching: breakpoints are placed on the tools, the system prompt and the tail of the
   * conversation (see `activities/model/cache-breakpoints.ts`). `false` sends the request without
   * any; `{ ttl }` overrides the configured TTL.
   */
  promptCache?: false | { ttl: PromptCacheTtl };
  /**
   * The `tool_use_id` of the oldest tool result a later context edit may replace: a fourth
   * breakpoint goes on the block before it, so the edit rewrites the cache only from there.
   */
  editFrontier?: string;
  /**
   * The `tool_use_id` of the first tool result the request's clear batch replaced (in conversation
   * order): the cached prefix ends just before it, so a breakpoint goes there to read it back.
   */
  clearedFrom?: string;
}

/** The assistant message exactly as the API returned it (usage is normalised into `ModelReply.usage`). */
export interface AssistantMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  /** Content blocks as returned: text, tool_use, thinking and redacted_thinking included, unchanged. */
  content: ContentBlock[];
  stop_reason: StopReason | null;
  stop_sequence: string | null;
}

export interface ModelReply {
  message: AssistantMessage;
  stopReason: StopReason | null;
  /** Usage of the request that produced this reply. */
  usage: TokenUsage;
  /**
   * Usage billed to earlier attempts of the same call that failed after the API had counted tokens
   * (e.g. a stream that broke off); absent when there were none. A ledger counts it with `usage`.
   */
  failedAttemptsUsage?: TokenUsage;
  /** The API's `request-id` header, for support requests and log correlation. */
  requestId: string | null;
}

/**
 * `ApplicationFailure.type` of every failure a model call can end with. Retryable ones may carry a
 * `nextRetryDelay`; non-retryable ones are also listed in `MODEL_NON_RETRYABLE_FAILURE_TYPES`.
 */
export const MODEL_FAILURE_TYPES = {
  /** 429: over the rate limit; retried after the server's `retry-after`. */
  rateLimited: 'ModelRateLimited',
  /** 529: the API is overloaded. */
  overloaded: 'ModelOverloaded',
  /** 500/502/503/504 and other 5xx. */
  serverError: 'ModelServerError',
  /** The API could not be reached, or the connection dropped while the stream ran. */
  connectionFailed: 'ModelConnectionFailed',
  /** No response headers within the request timeout, a 408, or a stream that stalled. */
  timedOut: 'ModelTimedOut',
  /** An `error` event arrived in the middle of a streamed response (after HTTP 200). */
  streamError: 'ModelStreamError',
  /** 400: the request is malformed; sending it again cannot help. */
  invalidRequest: 'ModelInvalidRequest',
  /** 401: the API key is missing or wrong. */
  authenticationFailed: 'ModelAuthenticationFailed',
  /** 403: the key may not use this model or feature. */
  permissionDenied: 'ModelPermissionDenied',
  /** 404: unknown model or wrong base URL. */
  notFound: 'ModelNotFound',
  /** 413: the request body is over the API's size limit. */
  requestTooLarge: 'ModelRequestTooLarge',
  /**
   * 400 whose prompt does not fit the model's context window ("prompt is too long: N tokens > M
   * maximum"). Sending it again cannot help; compacting the context can.
   */
  promptTooLong: 'ModelPromptTooLong',
  /** Another 4xx the API refused (e.g. 402 billing, 422). */
  requestRejected: 'ModelRequestRejected',
  /** The model settings (environment) are missing or invalid, e.g. no `ANTHROPIC_API_KEY`. */
  notConfigured: 'ModelNotConfigured',
  /** A failure in the harness's own code around the call. */
  unexpected: 'ModelUnexpectedError',
} as const;

export type ModelFailureType = (typeof MODEL_FAILURE_TYPES)[keyof typeof MODEL_FAILURE_TYPES];

/** Failures that mean "this context does not fit": the operation compacts once and retries. */
export const CONTEXT_TOO_LARGE_FAILURE_TYPES: readonly string[] = [
  MODEL_FAILURE_TYPES.requestTooLarge,
  MODEL_FAILURE_TYPES.promptTooLong,
];

export const MODEL_NON_RETRYABLE_FAILURE_TYPES: readonly ModelFailureType[] = [
  MODEL_FAILURE_TYPES.invalidRequest,
  MODEL_FAILURE_TYPES.authenticationFailed,
  MODEL_FAILURE_TYPES.permissionDenied,
  MODEL_FAILURE_TYPES.notFound,
  MODEL_FAILURE_TYPES.requestTooLarge,
  MODEL_FAILURE_TYPES.promptTooLong,
  MODEL_FAILURE_TYPES.requestRejected,
  MODEL_FAILURE_TYPES.notConfigured,
  MODEL_FAILURE_TYPES.unexpected,
];

/** `details[0]` of every model-call `ApplicationFailure`. */
export interface ModelFailureDetails {
  /** HTTP status, or null for connection failures, timeouts and mid-stream errors. */
  status: number | null;
  /** The API's `error.type` (e.g. `overloaded_error`), when it sent one. */
  apiErrorType: string | null;
  requestId: string | null;
  /** Usage the failed attempt had already received (a stream that broke off), or null. */
  usage: TokenUsage | null;
  /** Usage of earlier failed attempts of the same call (see `ModelReply.failedAttemptsUsage`). */
  failedAttemptsUsage: TokenUsage | null;
  /** The delay the server asked for before a retry, in milliseconds. */
  retryAfterMs: number | null;
}

/** What the model activity records with each heartbeat; the next attempt reads it back. */
export interface ModelHeartbeatDetails {
  requestId: string | null;
  /** Stream events received so far in this attempt. */
  events: number;
  /** Usage reported so far by this attempt's stream, or null before `message_start`. */
  usage: TokenUsage | null;
  failedAttemptsUsage: TokenUsage | null;
}

function asUsage(value: unknown): TokenUsage | null {
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, unknown>;
  const fields = ['input', 'cacheWrite', 'cacheRead', 'output'] as const;
  if (!fields.every((field) => typeof v[field] === 'number')) return null;
  const usage: TokenUsage = {
    input: v.input as number,
    cacheWrite: v.cacheWrite as number,
    cacheRead: v.cacheRead as number,
    output: v.output as number,
  };
  if (typeof v.cacheWrite1h === 'number' && v.cacheWrite1h > 0) usage.cacheWrite1h = v.cacheWrite1h;
  return usage;
}

/**
 * The usage billed to a model call that finally failed, read from its failure's details
 * (`ModelFailureDetails`) or, after a timeout, its last heartbeat (`ModelHeartbeatDetails`): the
 * failed attempt's own usage plus that of the attempts before it. Null when it carries none.
 */
export function usageOfFailedCall(details: unknown): TokenUsage | null {
  if (typeof details !== 'object' || details === null) return null;
  const { usage, failedAttemptsUsage } = details as { usage?: unknown; failedAttemptsUsage?: unknown };
  const own = asUsage(usage);
  const earlier = asUsage(failedAttemptsUsage);
  if (own && earlier) return addUsage(own, earlier);
  return own ?? earlier;
}
