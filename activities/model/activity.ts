/**
 * One Messages API request from inside an activity (the brain's `modelStep`): streamed through
 * `sendMessagesRequest`, heartbeating while the stream runs and aborting when Temporal cancels it.
 *
 * Usage survives failed attempts: every heartbeat records the usage received so far plus that of
 * earlier failed attempts; the next attempt reads it back from `heartbeatDetails`, and the final
 * reply (or failure) reports it as `failedAttemptsUsage`.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { Context } from '@temporalio/activity';
import { z } from 'zod';
import {
  addUsage,
  type ModelHeartbeatDetails,
  type ModelReply,
  type ModelRequest,
  type TokenUsage,
} from '../../common/model-types';
import { sendMessagesRequest, type SendMessagesRequestInput } from './messages-request';
import { Heartbeat } from '../heartbeat';
import type { ModelSettings } from './settings';

const usageSchema = z.object({
  input: z.number(),
  cacheWrite: z.number(),
  cacheWrite1h: z.number().optional(),
  cacheRead: z.number(),
  output: z.number(),
});
const heartbeatSchema = z.object({ usage: usageSchema.nullable(), failedAttemptsUsage: usageSchema.nullable() });

/** Usage of all earlier failed attempts, as the last heartbeat of the previous attempt recorded it. */
export function failedAttemptsUsageFrom(heartbeatDetails: unknown): TokenUsage | undefined {
  const parsed = heartbeatSchema.safeParse(heartbeatDetails);
  if (!parsed.success) return undefined;
  const { usage, failedAttemptsUsage } = parsed.data;
  if (usage && failedAttemptsUsage) return addUsage(usage, failedAttemptsUsage);
  return usage ?? failedAttemptsUsage ?? undefined;
}

/**
 * Sends one request from inside an activity: heartbeats on a timer from half a second in, and
 * whenever usage arrives after that or the attempt fails (so a later attempt cannot lose it),
 * carries the usage of earlier failed attempts (read from the previous attempt's last heartbeat)
 * into the reply, and aborts on activity cancellation.
 * Every model-calling activity goes through here.
 */
export async function sendWithHeartbeats(input: {
  client: Anthropic;
  settings: ModelSettings;
  request: ModelRequest;
  heartbeatIntervalMs?: number;
  onStreamEvent?: SendMessagesRequestInput['onStreamEvent'];
}): Promise<ModelReply> {
  const context = Context.current();
  const intervalMs =
    input.heartbeatIntervalMs ?? Math.max(1000, Math.floor((context.info.heartbeatTimeoutMs ?? 30_000) / 3));
  // Lazy: a call that ends within half a second writes no heartbeat (at a short model step, one
  // write of the workflow's state on the server less per step). A call that fails sooner flushes its
  // details, so the next attempt still reads the usage this one was billed.
  const heartbeat = new Heartbeat<ModelHeartbeatDetails>(
    context,
    intervalMs,
    {
      requestId: null,
      events: 0,
      usage: null,
      failedAttemptsUsage: failedAttemptsUsageFrom(context.info.heartbeatDetails) ?? null,
    },
    false,
  );
  try {
    return await sendMessagesRequest({
      client: input.client,
      request: input.request,
      settings: input.settings,
      signal: context.cancellationSignal,
      failedAttemptsUsage: heartbeat.details.failedAttemptsUsage ?? undefined,
      onStreamEvent: input.onStreamEvent,
      onProgress: (progress) => {
        const usageChanged = progress.usage !== heartbeat.details.usage;
        heartbeat.set(progress, usageChanged || progress.events % 50 === 0);
      },
    });
  } catch (err) {
    heartbeat.flush();
    throw err;
  } finally {
    heartbeat.stop();
  }
}
