/**
 * Recovery: a worker process (brain + hands) is SIGKILLed while the operation's tool call runs
 * (`sleep S; echo …` in the sandbox), and a replacement worker is started at once on the same queues.
 * Measures SIGKILL → the operation's next model request (its progress), with the parts in between
 * read from the history, and whether the operation completed.
 *
 * First with the defaults (the tool activity's 30 s heartbeat timeout decides when Temporal notices
 * the dead worker), then with the settings that shorten it: the operation's `heartbeatTimeoutMs`, and
 * additionally the worker's `stickyQueueScheduleToStartTimeout` (a workflow task scheduled within the
 * server's sticky-poller window still goes to the dead worker's sticky queue and waits that long).
 */
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { operationResult } from '../../client/operation-result';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { runId, startOperation, uniqueQueues, type BenchContext } from '../context';
import { goalParam, markerText, requestsOf, stepsScript } from '../model';
import type { BenchProfile } from '../profiles';
import type { RecoveryMeasurement, RecoveryResult } from '../results';
import { spawnWorkerChild, type WorkerChild } from '../worker-child';

const TOOL_OUTPUT = 'recovered-tool-output';
/** How far into the tool call the worker is killed. */
const KILL_AFTER_START_MS = 1_000;
/** The TypeScript SDK's default `stickyQueueScheduleToStartTimeout`. */
const SDK_DEFAULT_STICKY_MS = 10_000;

interface Variant {
  label: string;
  heartbeatTimeoutMs?: number;
  stickyQueueScheduleToStartTimeoutMs?: number;
}

export async function runRecovery(ctx: BenchContext, profile: BenchProfile['recovery']): Promise<RecoveryResult> {
  const command = `sleep ${profile.toolSleepSeconds}; echo ${TOOL_OUTPUT}`;
  const server = await startScriptedModelServer({
    script: stepsScript({
      steps: (request) => goalParam(request, 'steps') ?? 0,
      call: () => ({ name: 'bash', input: { command } }),
    }),
  });
  const fastHeartbeat = `heartbeatTimeoutMs ${profile.heartbeatTimeoutMs / 1000} s`;
  const variants: Variant[] = [
    { label: 'defaults' },
    { label: fastHeartbeat, heartbeatTimeoutMs: profile.heartbeatTimeoutMs },
    {
      label: `${fastHeartbeat} + worker stickyQueueScheduleToStartTimeout ${profile.stickyQueueScheduleToStartTimeoutMs / 1000} s`,
      heartbeatTimeoutMs: profile.heartbeatTimeoutMs,
      stickyQueueScheduleToStartTimeoutMs: profile.stickyQueueScheduleToStartTimeoutMs,
    },
  ];
  try {
    const measured: RecoveryMeasurement[] = [];
    for (const variant of variants) measured.push(await recoverOnce(ctx, server, variant));
    return { ...measured[0]!, variants: measured };
  } finally {
    await server.stop();
  }
}

async function recoverOnce(
  ctx: BenchContext,
  server: ScriptedModelServer,
  variant: Variant,
): Promise<RecoveryMeasurement> {
  const queues = uniqueQueues('bench-recovery');
  const config = {
    address: ctx.address,
    namespace: ctx.namespace,
    workflowBundlePath: ctx.workflowBundlePath,
    image: ctx.image,
    modelUrl: server.url,
    ...queues,
    ...(variant.stickyQueueScheduleToStartTimeoutMs
      ? { stickyQueueScheduleToStartTimeoutMs: variant.stickyQueueScheduleToStartTimeoutMs }
      : {}),
  };
  const id = runId('recovery', 'kill');
  const workers: WorkerChild[] = [];
  try {
    workers.push(await spawnWorkerChild(config, ctx.log));
    const goal = `${markerText(id)} steps=1: run a command that takes a while`;
    const handle = await startOperation(
      ctx.client,
      queues,
      { goal, ...(variant.heartbeatTimeoutMs ? { heartbeatTimeoutMs: variant.heartbeatTimeoutMs } : {}) },
      id,
    );
    await waitUntil(
      async () => {
        const pending = (await handle.describe()).raw.pendingActivities ?? [];
        return pending.some(
          (activity) =>
            activity.activityType?.name === 'runTool' &&
            activity.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
        );
      },
      'the tool call to start',
      60_000,
    );
    await delay(KILL_AFTER_START_MS);
    const killedAt = Date.now();
    await workers[0]!.kill();
    const replacement = await spawnWorkerChild(config, ctx.log);
    workers.push(replacement);

    const progressAt = await waitUntil(
      async () => requestsOf(server.requests, id)[1]?.receivedAt,
      'the operation to make progress',
      240_000,
    );
    const result = await operationResult(handle);
    const events = (await handle.fetchHistory()).events ?? [];
    const scheduled = events.find(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool',
    );
    const sameActivity = (scheduledEventId: unknown) => String(scheduledEventId) === String(scheduled?.eventId);
    const completed = events.find(
      (event) =>
        event.activityTaskCompletedEventAttributes &&
        sameActivity(event.activityTaskCompletedEventAttributes.scheduledEventId),
    );
    const started = events.find(
      (event) =>
        event.activityTaskStartedEventAttributes &&
        sameActivity(event.activityTaskStartedEventAttributes.scheduledEventId),
    );
    const toolResult = toolResultOf(requestsOf(server.requests, id)[1]?.body);
    const heartbeatTimeout = scheduled?.activityTaskScheduledEventAttributes?.heartbeatTimeout;
    const measurement: RecoveryMeasurement = {
      label: variant.label,
      heartbeatTimeoutMs: heartbeatTimeout ? tsToMs(heartbeatTimeout) : Number.NaN,
      stickyQueueScheduleToStartTimeoutMs: variant.stickyQueueScheduleToStartTimeoutMs ?? SDK_DEFAULT_STICKY_MS,
      killToProgressMs: progressAt - killedAt,
      completed: result.state === 'completed',
      killToReplacementReadyMs: replacement.readyAt - killedAt,
      killToToolCompletedMs: completed?.eventTime ? tsToMs(completed.eventTime) - killedAt : Number.NaN,
      toolResult: toolResult.includes('[interrupted')
        ? 'interrupted'
        : toolResult.includes(TOOL_OUTPUT)
          ? 'recorded'
          : 'other',
      toolAttempts: started?.activityTaskStartedEventAttributes?.attempt ?? Number.NaN,
    };
    ctx.log(
      `recovery (${variant.label}): progress ${(measurement.killToProgressMs / 1000).toFixed(1)} s after the kill; ${result.state}; tool result ${measurement.toolResult}`,
    );
    return measurement;
  } finally {
    for (const worker of workers) await worker.stop();
    await ctx.removeSandboxes([id]);
  }
}

/** The tool results of the request's last (user) message, as text. */
function toolResultOf(body: unknown): string {
  const messages = (body as { messages?: Array<{ content: unknown }> } | null)?.messages ?? [];
  const last = messages[messages.length - 1]?.content;
  if (!Array.isArray(last)) return '';
  return (last as Array<{ type?: string; content?: unknown }>)
    .filter((block) => block.type === 'tool_result')
    .map((block) => (typeof block.content === 'string' ? block.content : JSON.stringify(block.content)))
    .join('\n');
}

async function waitUntil<T>(check: () => Promise<T | undefined | false>, what: string, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`recovery: timed out waiting for ${what}`);
    await delay(50);
  }
}

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
