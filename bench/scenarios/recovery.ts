/**
 * Recovery: a worker process (brain + hands, default settings) is SIGKILLed in the middle of a call
 * while a second worker process stands by on the same queues — a deployment with more than one
 * worker. The killed worker ran the whole operation so far (it holds the workflow in its cache and
 * its sticky queue), so this is the worst case. Once during a tool call (a `bash` command that wrote
 * its side effect and waits; it is let go right after the kill) and once during a model call (the
 * scripted model holds the first attempt of the second turn's answer). Measures SIGKILL → the
 * operation's next effect (the next model request after the tool call; the retried model request),
 * with the parts in between read from the history, whether the operation completed, and — tool case
 * — whether the retried `bash` call returned the first attempt's journalled output without running
 * the command again.
 */
import { execFileSync } from 'node:child_process';
import { JOURNAL_DIR, JOURNAL_WRITER } from '../../activities/hands/journal-store';
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { operationResult } from '../../client/operation-result';
import { containerNameOf } from '../../common/sandbox-names';
import type { ScriptedRequest, ScriptedTurn } from '../../scripted-model/script';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { runId, startOperation, uniqueQueues, type BenchContext } from '../context';
import { goalOf, markerText, requestsOf, turnsTaken } from '../model';
import type { RecoveryMeasurement, RecoveryResult } from '../results';
import { spawnWorkerChild, workerProcessConfig, type WorkerChild } from '../worker-child';

const TOOL_OUTPUT = 'recovered-tool-output';
const EFFECTS_FILE = '/workspace/recovery-effects.log';
/** How long the scripted model holds the model call that is interrupted (longer than any failover). */
const HELD_MODEL_CALL_MS = 120_000;

type During = RecoveryMeasurement['during'];

const waitForFile = (file: string): string => `while [ ! -f /workspace/${file} ]; do sleep 0.05; done`;

/**
 * `[bench:<id>] during=tool|model`. Turn 1: a bash call — during=tool, the one that is interrupted
 * (side effect, then it waits for `release`); during=model, one that waits for `go` (the standby
 * starts meanwhile). Turn 2: the final answer; during=model its first request is held.
 */
function recoveryScript(): (request: ScriptedRequest) => ScriptedTurn {
  const held = new Set<string>();
  return (request) => {
    const goal = goalOf(request.body);
    const duringModel = goal.includes('during=model');
    if (turnsTaken(request) === 0) {
      const command = duringModel
        ? waitForFile('go')
        : `echo ran >> ${EFFECTS_FILE}; ${waitForFile('release')}; echo ${TOOL_OUTPUT}`;
      return { toolCalls: [{ name: 'bash', input: { command } }] };
    }
    if (duringModel && !held.has(goal)) {
      held.add(goal);
      return { text: 'recovered', latencyMs: HELD_MODEL_CALL_MS };
    }
    return { text: 'recovered' };
  };
}

export async function runRecovery(ctx: BenchContext): Promise<RecoveryResult> {
  const server = await startScriptedModelServer({ script: recoveryScript() });
  try {
    const tool = await recoverOnce(ctx, server, 'tool');
    const model = await recoverOnce(ctx, server, 'model');
    return { tool, model };
  } finally {
    await server.stop();
  }
}

async function recoverOnce(
  ctx: BenchContext,
  server: ScriptedModelServer,
  during: During,
): Promise<RecoveryMeasurement> {
  const queues = uniqueQueues('bench-recovery');
  const config = workerProcessConfig(ctx, server.url, queues);
  const id = runId('recovery', during);
  const container = containerNameOf(id);
  const workers: WorkerChild[] = [];
  try {
    workers.push(await spawnWorkerChild(config, ctx.log));
    const goal = `${markerText(id)} during=${during}: survive a killed worker`;
    const handle = await startOperation(ctx.client, queues, { goal, keepContainer: true }, id);
    // The first worker alone runs the operation up to the bash call of turn 1.
    await waitUntil(
      async () => tryExec(container, `ls ${JOURNAL_DIR}/run 2>/dev/null`, JOURNAL_WRITER)?.trim(),
      'the bash call',
      60_000,
    );
    workers.push(await spawnWorkerChild(config, ctx.log));
    if (during === 'model') {
      tryExec(container, 'touch /workspace/go');
      await waitUntil(async () => modelRequestsOf(server, id).length >= 2 || undefined, 'the model call', 60_000);
    } else {
      await waitUntil(
        async () => tryExec(container, `cat ${EFFECTS_FILE}`)?.includes('ran'),
        'the side effect',
        60_000,
      );
    }
    const activityType = during === 'tool' ? 'runTool' : 'modelStep';
    const holder = await waitUntil(
      async () => {
        const pending = (await handle.describe()).raw.pendingActivities ?? [];
        const call = pending.find(
          (activity) =>
            activity.activityType?.name === activityType &&
            activity.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
        );
        return call?.lastWorkerIdentity && call.lastHeartbeatTime
          ? { pid: Number(call.lastWorkerIdentity.split('@')[0]), lastHeartbeatMs: tsToMs(call.lastHeartbeatTime) }
          : undefined;
      },
      `the ${during} call to run`,
      60_000,
    );
    const victim = workers.find((worker) => worker.pid === holder.pid);
    if (!victim) throw new Error(`recovery: the ${during} call runs on ${holder.pid}, not on a bench worker`);
    // The last heartbeat the server recorded just before the kill (a fresh describe: heartbeats go out every second).
    const lastHeartbeat = (await handle.describe()).raw.pendingActivities?.find(
      (activity) => activity.activityType?.name === activityType,
    )?.lastHeartbeatTime;
    const killedAt = Date.now();
    await victim.kill();
    if (during === 'tool') execFileSync('docker', ['exec', '-u', AGENT_USER, container, 'touch', '/workspace/release']);

    // Tool case: the request after the tool call; model case: the retry of the held request.
    const progressAt = await waitUntil(
      async () => modelRequestsOf(server, id)[during === 'tool' ? 1 : 2]?.receivedAt,
      'the operation to make progress',
      240_000,
    );
    const result = await operationResult(handle);
    const { scheduled, started, completed } = interruptedCall(
      (await handle.fetchHistory()).events ?? [],
      activityType,
      during === 'tool' ? 0 : 1,
    );
    const heartbeatTimeout = scheduled?.activityTaskScheduledEventAttributes?.heartbeatTimeout;
    const toolResult = toolResultOf(requestsOf(server.requests, id)[1]?.body);
    const measurement: RecoveryMeasurement = {
      during,
      heartbeatTimeoutMs: heartbeatTimeout ? tsToMs(heartbeatTimeout) : Number.NaN,
      killToProgressMs: progressAt - killedAt,
      completed: result.state === 'completed',
      killToActivityCompletedMs: completed?.eventTime ? tsToMs(completed.eventTime) - killedAt : Number.NaN,
      lastHeartbeatBeforeKillMs: lastHeartbeat ? killedAt - tsToMs(lastHeartbeat) : undefined,
      killToRetryStartedMs: started?.eventTime ? tsToMs(started.eventTime) - killedAt : undefined,
      attempts: started?.activityTaskStartedEventAttributes?.attempt ?? Number.NaN,
      toolResult:
        during === 'model'
          ? 'n/a'
          : toolResult.includes('[interrupted')
            ? 'interrupted'
            : toolResult.includes(TOOL_OUTPUT)
              ? 'recorded'
              : 'other',
      effects:
        during === 'tool' ? (tryExec(container, `cat ${EFFECTS_FILE}`) ?? '').split('\n').filter(Boolean).length : null,
    };
    ctx.log(
      `recovery (${during} call): progress ${(measurement.killToProgressMs / 1000).toFixed(1)} s after the kill; ${result.state}` +
        (during === 'tool'
          ? `; tool result ${measurement.toolResult}, command ran ${measurement.effects} time(s)`
          : ''),
    );
    return measurement;
  } finally {
    for (const worker of workers) await worker.stop();
    await ctx.removeSandboxes([id]);
  }
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The `index`-th `activityType` call of the history: its scheduled, (last) started and completed events. */
function interruptedCall(
  events: HistoryEvent[],
  activityType: string,
  index: number,
): { scheduled?: HistoryEvent; started?: HistoryEvent; completed?: HistoryEvent } {
  const scheduled = events.filter(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === activityType,
  )[index];
  const ofScheduled = (scheduledEventId: unknown) => String(scheduledEventId) === String(scheduled?.eventId);
  return {
    scheduled,
    started: events.find(
      (event) =>
        event.activityTaskStartedEventAttributes &&
        ofScheduled(event.activityTaskStartedEventAttributes.scheduledEventId),
    ),
    completed: events.find(
      (event) =>
        event.activityTaskCompletedEventAttributes &&
        ofScheduled(event.activityTaskCompletedEventAttributes.scheduledEventId),
    ),
  };
}

function tryExec(container: string, script: string, user = AGENT_USER): string | undefined {
  try {
    return execFileSync('docker', ['exec', '-u', user, container, 'bash', '-c', script], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return undefined;
  }
}

/** Every model request of the run, answered or not, in arrival order. */
function modelRequestsOf(server: ScriptedModelServer, id: string) {
  return server.requests.filter(
    (request) => request.path === '/v1/messages' && goalOf(request.body).includes(markerText(id)),
  );
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
