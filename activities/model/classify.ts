/**
 * The one place model-call errors become typed `ApplicationFailure`s. Decisions use the SDK's error
 * classes, HTTP status codes and the API's `error.type`, never message text. Every failure carries
 * `ModelFailureDetails` so usage an attempt had already received is never lost.
 */
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/common';
import { MODEL_FAILURE_TYPES, ModelFailureDetails, ModelFailureType, TokenUsage } from '../../common/model-types';
import { MODEL_ENV } from './settings';

/** What the request had got to when it failed. */
export interface ModelAttemptState {
  /** Where the request went (for messages about unreachable servers). */
  baseURL: string;
  model: string;
  requestId: string | null;
  /** Usage received so far (from `message_start` / `message_delta`), or null. */
  usage: TokenUsage | null;
  failedAttemptsUsage: TokenUsage | null;
  /** Stream events received so far. */
  events: number;
  /** True while waiting for the next piece of the response body (after the headers arrived). */
  streaming: boolean;
}

interface Classification {
  type: ModelFailureType;
  retryable: boolean;
  message: string;
  status: number | null;
  apiErrorType: string | null;
  requestId: string | null;
  retryAfterMs: number | null;
}

export function classifyModelError(
  error: unknown,
  attempt: ModelAttemptState,
  now: () => number = Date.now,
): ApplicationFailure {
  return toFailure(classify(error, attempt, now), attempt, error);
}

/** A stream that went silent for longer than `idleMs`: retryable, like a timeout. */
export function streamStalledFailure(idleMs: number, attempt: ModelAttemptState): ApplicationFailure {
  return toFailure(
    {
      type: MODEL_FAILURE_TYPES.timedOut,
      retryable: true,
      message: `the model stream stalled: no event for ${formatMs(idleMs)} after ${attempt.events} events (${MODEL_ENV.streamIdleTimeoutMs})`,
      status: null,
      apiErrorType: null,
      requestId: attempt.requestId,
      retryAfterMs: null,
    },
    attempt,
    undefined,
  );
}

/** The response body ended without `message_stop`: the connection was cut. Retryable. */
export function streamEndedEarlyFailure(attempt: ModelAttemptState): ApplicationFailure {
  return toFailure(
    {
      type: MODEL_FAILURE_TYPES.connectionFailed,
      retryable: true,
      message: `the model stream ended before message_stop, after ${attempt.events} events`,
      status: null,
      apiErrorType: null,
      requestId: attempt.requestId,
      retryAfterMs: null,
    },
    attempt,
    undefined,
  );
}

/** Settings missing or invalid: non-retryable, one line per variable to fix. */
export function notConfiguredFailure(problems: string[]): ApplicationFailure {
  return ApplicationFailure.create({
    type: MODEL_FAILURE_TYPES.notConfigured,
    nonRetryable: true,
    message: `the model is not configured: ${problems.join('; ')}`,
  });
}

function classify(error: unknown, attempt: ModelAttemptState, now: () => number): Classification {
  const base = { status: null, apiErrorType: null, requestId: attempt.requestId, retryAfterMs: null };
  if (error instanceof APIConnectionTimeoutError) {
    return {
      ...base,
      type: MODEL_FAILURE_TYPES.timedOut,
      retryable: true,
      message: `the model API at ${attempt.baseURL} did not answer in time (${MODEL_ENV.requestTimeoutMs})`,
    };
  }
  if (error instanceof APIUserAbortError) {
    return {
      ...base,
      type: MODEL_FAILURE_TYPES.unexpected,
      retryable: false,
      message: 'the model request was aborted without a cancellation',
    };
  }
  if (error instanceof APIConnectionError) {
    return {
      ...base,
      type: MODEL_FAILURE_TYPES.connectionFailed,
      retryable: true,
      message: `could not reach the model API at ${attempt.baseURL} (check ${MODEL_ENV.baseURL} and the network)`,
    };
  }
  if (error instanceof APIError) {
    const requestId = error.requestID ?? attempt.requestId;
    const apiErrorType = error.type ?? null;
    const detail = error.apiMessage ? `: ${error.apiMessage}` : '';
    const withApi = { ...base, requestId, apiErrorType };
    if (error.status === undefined) {
      return {
        ...withApi,
        type: MODEL_FAILURE_TYPES.streamError,
        retryable: true,
        message: `the model stream broke off with ${apiErrorType ?? 'an error event'} after ${attempt.events} events${detail}`,
      };
    }
    return classifyStatus(error.status, error.headers, { ...withApi, status: error.status }, detail, attempt, now);
  }
  if (attempt.streaming) {
    // Not an SDK error, raised while the response body was being read: the connection broke.
    return {
      ...base,
      type: MODEL_FAILURE_TYPES.connectionFailed,
      retryable: true,
      message: `the connection to the model API broke while the response was streaming (${describe(error)})`,
    };
  }
  return {
    ...base,
    type: MODEL_FAILURE_TYPES.unexpected,
    retryable: false,
    message: `the model call failed unexpectedly: ${describe(error)}`,
  };
}

function classifyStatus(
  status: number,
  headers: Headers | undefined,
  base: Omit<Classification, 'type' | 'retryable' | 'message'>,
  detail: string,
  attempt: ModelAttemptState,
  now: () => number,
): Classification {
  const fail = (type: ModelFailureType, retryable: boolean, message: string): Classification => ({
    ...base,
    type,
    retryable,
    message,
  });
  switch (status) {
    case 400:
      if (isPromptTooLong(base.apiErrorType, detail)) {
        return fail(
          MODEL_FAILURE_TYPES.promptTooLong,
          false,
          `the prompt does not fit the model's context window (400): compact the conversation${detail}`,
        );
      }
      return fail(
        MODEL_FAILURE_TYPES.invalidRequest,
        false,
        `the model API rejected the request as invalid (400)${detail}`,
      );
    case 401:
      return fail(
        MODEL_FAILURE_TYPES.authenticationFailed,
        false,
        `authentication failed (401): check ${MODEL_ENV.apiKey}`,
      );
    case 403:
      return fail(
        MODEL_FAILURE_TYPES.permissionDenied,
        false,
        `permission denied (403): the key in ${MODEL_ENV.apiKey} may not use model "${attempt.model}"${detail}`,
      );
    case 404:
      return fail(
        MODEL_FAILURE_TYPES.notFound,
        false,
        `not found (404): check ${MODEL_ENV.model} ("${attempt.model}") and ${MODEL_ENV.baseURL} (${attempt.baseURL})${detail}`,
      );
    case 408:
      return fail(MODEL_FAILURE_TYPES.timedOut, true, `the model API timed out the request (408)${detail}`);
    case 413:
      return fail(
        MODEL_FAILURE_TYPES.requestTooLarge,
        false,
        `the request is too large for the model API (413): compact the conversation or shorten tool results${detail}`,
      );
    case 429: {
      const retryAfterMs = retryAfterFromHeaders(headers, now);
      const wait = retryAfterMs === null ? '' : `; the server asked to wait ${formatMs(retryAfterMs)}`;
      return {
        ...fail(MODEL_FAILURE_TYPES.rateLimited, true, `rate limited by the model API (429)${wait}`),
        retryAfterMs,
      };
    }
    case 529:
      return fail(MODEL_FAILURE_TYPES.overloaded, true, `the model API is overloaded (529)`);
  }
  if (status >= 500) return fail(MODEL_FAILURE_TYPES.serverError, true, `the model API failed with ${status}${detail}`);
  return fail(MODEL_FAILURE_TYPES.requestRejected, false, `the model API refused the request (${status})${detail}`);
}

/**
 * The API reports a prompt over the context window only in the message of a 400
 * `invalid_request_error` ("prompt is too long: 208656 tokens > 200000 maximum", or "input length and
 * `max_tokens` exceed context limit: …"): no error type or field says so. This is the one decision
 * made on message text, because the operation's answer to it (compact, then retry) differs from
 * every other 400's (fail).
 */
const PROMPT_TOO_LONG = /^: (prompt is too long|input length and `?max_tokens`? exceed context limit)/i;

function isPromptTooLong(apiErrorType: string | null, detail: string): boolean {
  return apiErrorType === 'invalid_request_error' && PROMPT_TOO_LONG.test(detail);
}

/** `retry-after-ms` (milliseconds), else `retry-after` (seconds or an HTTP date); null when absent or unusable. */
export function retryAfterFromHeaders(headers: Headers | undefined, now: () => number = Date.now): number | null {
  if (!headers) return null;
  const ms = headers.get('retry-after-ms');
  if (ms !== null) {
    const value = Number.parseFloat(ms);
    if (Number.isFinite(value) && value >= 0) return Math.round(value);
  }
  const after = headers.get('retry-after');
  if (after !== null) {
    const seconds = Number.parseFloat(after);
    if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
    const date = Date.parse(after);
    if (Number.isFinite(date)) return Math.max(0, date - now());
  }
  return null;
}

function toFailure(classification: Classification, attempt: ModelAttemptState, cause: unknown): ApplicationFailure {
  const details: ModelFailureDetails = {
    status: classification.status,
    apiErrorType: classification.apiErrorType,
    requestId: classification.requestId,
    usage: attempt.usage,
    failedAttemptsUsage: attempt.failedAttemptsUsage,
    retryAfterMs: classification.retryAfterMs,
  };
  const requestNote = classification.requestId ? ` [request ${classification.requestId}]` : '';
  return ApplicationFailure.create({
    type: classification.type,
    message: classification.message + requestNote,
    nonRetryable: !classification.retryable,
    nextRetryDelay: classification.retryAfterMs ?? undefined,
    details: [details],
    cause: cause instanceof Error ? cause : undefined,
  });
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`;
}
