/**
 * One Messages API request, streamed: the function every model call of the harness goes through
 * (the `callModel` activity, and the operation workflow's model step). It knows nothing of
 * Temporal; the caller injects cancellation (`signal`) and liveness (`onProgress`, e.g. heartbeats).
 *
 * Contract:
 *  - exactly one HTTP request (build the client with `maxRetries: 0`; retries belong to Temporal);
 *  - resolves with the assistant message exactly as streamed, its stop reason, usage and request id;
 *  - rejects with an `ApplicationFailure` classified by `classify.ts`, whose details carry any usage
 *    already received, or, when `signal` aborted, with `signal.reason`;
 *  - a stream silent for longer than `settings.streamIdleTimeoutMs` is abandoned (retryable timeout).
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { MessageCreateParamsStreaming, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import {
  isZeroUsage,
  ModelHeartbeatDetails,
  ModelReply,
  ModelRequest,
  TokenUsage,
  ZERO_USAGE,
} from '../../common/model-types';
import { placeCacheBreakpoints, stripCacheBreakpoints } from './cache-breakpoints';
import { classifyModelError, ModelAttemptState, streamEndedEarlyFailure, streamStalledFailure } from './classify';
import { MessageAccumulator } from './message-accumulator';
import type { ModelSettings } from './settings';

export type ModelCallSettings = Pick<ModelSettings, 'model' | 'maxTokens' | 'promptCacheTtl' | 'streamIdleTimeoutMs'>;

/** Progress of one request: what a heartbeat records. */
export type ModelCallProgress = ModelHeartbeatDetails;

export interface SendMessagesRequestInput {
  /** A client built with `maxRetries: 0`. */
  client: Anthropic;
  request: ModelRequest;
  /** Defaults for what the request leaves out, and the stream idle limit. */
  settings: ModelCallSettings;
  /** Aborts the request; the promise then rejects with `signal.reason`. */
  signal?: AbortSignal;
  /** Called when the response headers arrive and after every stream event. */
  onProgress?: (progress: ModelCallProgress) => void;
  /** Usage of earlier failed attempts of this call, carried into the reply and failure details. */
  failedAttemptsUsage?: TokenUsage;
  /** Called with every stream event as it arrives (e.g. to show the text live). */
  onStreamEvent?: (event: RawMessageStreamEvent) => void;
}

/** The Messages API params for `request`: defaults filled in, cache breakpoints placed, streaming. */
export function buildMessagesParams(
  request: ModelRequest,
  settings: Pick<ModelCallSettings, 'model' | 'maxTokens' | 'promptCacheTtl'>,
): MessageCreateParamsStreaming {
  const params: MessageCreateParamsStreaming = {
    model: request.model ?? settings.model,
    max_tokens: request.maxTokens ?? settings.maxTokens,
    messages: request.messages,
    stream: true,
  };
  if (request.system !== undefined) params.system = request.system;
  if (request.tools !== undefined) params.tools = request.tools;
  if (request.toolChoice !== undefined) params.tool_choice = request.toolChoice;
  if (request.thinking !== undefined) params.thinking = request.thinking;
  if (request.stopSequences !== undefined) params.stop_sequences = request.stopSequences;
  if (request.promptCache === false) return stripCacheBreakpoints(params);
  return placeCacheBreakpoints(
    params,
    request.promptCache?.ttl ?? settings.promptCacheTtl,
    request.editFrontier,
    request.clearedFrom,
  );
}

export async function sendMessagesRequest(input: SendMessagesRequestInput): Promise<ModelReply> {
  const { client, request, settings, signal, onProgress } = input;
  const failedAttemptsUsage =
    input.failedAttemptsUsage && !isZeroUsage(input.failedAttemptsUsage) ? input.failedAttemptsUsage : null;
  const params = buildMessagesParams(request, settings);
  const attempt: ModelAttemptState = {
    baseURL: client.baseURL,
    model: params.model,
    requestId: null,
    usage: null,
    failedAttemptsUsage,
    events: 0,
    streaming: false,
  };
  const stall = new AbortController();
  let stalled = false;
  const failure = (error: unknown): unknown => {
    if (signal?.aborted) return signal.reason;
    if (stalled) return streamStalledFailure(settings.streamIdleTimeoutMs, attempt);
    return classifyModelError(error, attempt);
  };
  const progress = (): void =>
    onProgress?.({ requestId: attempt.requestId, events: attempt.events, usage: attempt.usage, failedAttemptsUsage });

  const requestSignal = signal ? AbortSignal.any([signal, stall.signal]) : stall.signal;
  let events: AsyncIterator<RawMessageStreamEvent>;
  let abortStream: () => void;
  try {
    const { data, request_id } = await client.messages.create(params, { signal: requestSignal }).withResponse();
    attempt.requestId = request_id ?? null;
    events = data[Symbol.asyncIterator]();
    abortStream = () => data.controller.abort();
  } catch (error) {
    throw failure(error);
  }
  progress();

  const accumulator = new MessageAccumulator();
  const nextEvent = async (): Promise<IteratorResult<RawMessageStreamEvent>> => {
    const idleTimer = setTimeout(() => {
      stalled = true;
      stall.abort();
    }, settings.streamIdleTimeoutMs);
    attempt.streaming = true;
    try {
      return await events.next();
    } catch (error) {
      throw failure(error);
    } finally {
      attempt.streaming = false;
      clearTimeout(idleTimer);
    }
  };
  let ended = false;
  try {
    for (let next = await nextEvent(); !next.done; next = await nextEvent()) {
      attempt.events += 1;
      let usageChanged: boolean;
      try {
        usageChanged = accumulator.apply(next.value);
      } catch (error) {
        throw failure(error);
      }
      if (usageChanged) attempt.usage = accumulator.usage;
      input.onStreamEvent?.(next.value);
      progress();
    }
    ended = true;
  } finally {
    if (!ended) abortStream();
  }

  // The SDK ends the iteration quietly when the request was aborted.
  if (signal?.aborted) throw signal.reason;
  if (stalled) throw streamStalledFailure(settings.streamIdleTimeoutMs, attempt);
  if (!accumulator.complete) throw streamEndedEarlyFailure(attempt);

  const message = accumulator.result();
  return {
    message,
    stopReason: message.stop_reason,
    usage: accumulator.usage ?? ZERO_USAGE,
    ...(failedAttemptsUsage ? { failedAttemptsUsage } : {}),
    requestId: attempt.requestId,
  };
}
