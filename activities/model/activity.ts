/**
 * The `callModel` activity: one Messages API request per attempt, streamed through
 * `sendMessagesRequest`, heartbeating while the stream runs and aborting when Temporal cancels it.
 *
 * Usage survives failed attempts: every heartbeat records the usage received so far plus that of
 * earlier failed attempts; the next attempt reads it back from `heartbeatDetails`, and the final
 * reply (or failure) reports it as `failedAttemptsUsage`.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { Context } from '@temporalio/activity';
import { z } from 'zod';
import { addUsage, ModelHeartbeatDetails, ModelReply, ModelRequest, TokenUsage } from '../../common/model-types';
import { notConfiguredFailure } from './classify';
import { createAnthropicClient } from './client';
import { sendMessagesRequest } from './messages-request';
import { ModelSettings, readModelSettings } from './settings';

export interface CallModelInput {
  request: ModelRequest;
}

export interface ModelActivities {
  callModel(input: CallModelInput): Promise<ModelReply>;
}

export interface ModelActivityDeps {
  /** Where settings come from when `settings` is not given; read at each call. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Fixed settings (tests, embedding); skips the environment. */
  settings?: ModelSettings;
  /** A client to use for every call (built with `maxRetries: 0`); otherwise one per settings. */
  client?: Anthropic;
  /** Heartbeat at least this often while waiting; default a third of the heartbeat timeout. */
  heartbeatIntervalMs?: number;
}

const usageSchema = z.object({ input: z.number(), cacheWrite: z.number(), cacheRead: z.number(), output: z.number() });
const heartbeatSchema = z.object({ usage: usageSchema.nullable(), failedAttemptsUsage: usageSchema.nullable() });

/** Usage of all earlier failed attempts, as the last heartbeat of the previous attempt recorded it. */
export function failedAttemptsUsageFrom(heartbeatDetails: unknown): TokenUsage | undefined {
  const parsed = heartbeatSchema.safeParse(heartbeatDetails);
  if (!parsed.success) return undefined;
  const { usage, failedAttemptsUsage } = parsed.data;
  if (usage && failedAttemptsUsage) return addUsage(usage, failedAttemptsUsage);
  return usage ?? failedAttemptsUsage ?? undefined;
}

export function createModelActivities(deps: ModelActivityDeps = {}): ModelActivities {
  const clients = new Map<string, Anthropic>();
  const clientFor = (settings: ModelSettings): Anthropic => {
    if (deps.client) return deps.client;
    const key = JSON.stringify([settings.apiKey, settings.baseURL, settings.requestTimeoutMs]);
    let client = clients.get(key);
    if (!client) {
      client = createAnthropicClient(settings);
      clients.set(key, client);
    }
    return client;
  };

  return {
    async callModel({ request }) {
      let settings = deps.settings;
      if (!settings) {
        const result = readModelSettings(deps.env ?? process.env);
        if (!result.ok) throw notConfiguredFailure(result.problems);
        settings = result.settings;
      }
      return sendWithHeartbeats({
        client: clientFor(settings),
        settings,
        request,
        heartbeatIntervalMs: deps.heartbeatIntervalMs,
      });
    },
  };
}

/**
 * Sends one request from inside an activity: heartbeats on a timer and whenever usage arrives
 * (so a later failure cannot lose it), carries the usage of earlier failed attempts (read from the
 * previous attempt's last heartbeat) into the reply, and aborts on activity cancellation.
 * Every model-calling activity (`callModel`, the operation's `modelStep`) goes through here.
 */
export async function sendWithHeartbeats(input: {
  client: Anthropic;
  settings: ModelSettings;
  request: ModelRequest;
  heartbeatIntervalMs?: number;
}): Promise<ModelReply> {
  const context = Context.current();
  let latest: ModelHeartbeatDetails = {
    requestId: null,
    events: 0,
    usage: null,
    failedAttemptsUsage: failedAttemptsUsageFrom(context.info.heartbeatDetails) ?? null,
  };
  const heartbeat = (): void => context.heartbeat(latest);
  const intervalMs =
    input.heartbeatIntervalMs ?? Math.max(1000, Math.floor((context.info.heartbeatTimeoutMs ?? 30_000) / 3));
  heartbeat();
  const timer = setInterval(heartbeat, intervalMs);
  try {
    return await sendMessagesRequest({
      client: input.client,
      request: input.request,
      settings: input.settings,
      signal: context.cancellationSignal,
      failedAttemptsUsage: latest.failedAttemptsUsage ?? undefined,
      onProgress: (progress) => {
        const usageChanged = progress.usage !== latest.usage;
        latest = progress;
        if (usageChanged || progress.events % 50 === 0) heartbeat();
      },
    });
  } finally {
    clearInterval(timer);
  }
}
