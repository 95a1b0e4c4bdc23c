/**
 * A command hook in the session's sandbox: run as the agent in /workspace under the run wrapper,
 * with the same journal as a tool call (keyed by the hook run's id, on the journal volume the agent
 * cannot write), so a retried attempt follows the hook's replay policy exactly as a tool call does
 * (`../hands/earlier-attempt.ts`): an earlier attempt that finished gives its recorded result, one
 * still running is waited for, and a `never` hook that started and was cut off is reported
 * interrupted — never run twice. The event goes in on stdin; stdout and stderr come back apart
 * (`hook-output.ts`). The sandbox gives a hook no way out (no egress policy is opened for it).
 */
import type { Context } from '@temporalio/activity';
import {
  HOOK_TIMEOUT_DEFAULT_S,
  hookSummary,
  interpretHookRun,
  type CommandHook,
  type HookRunResult,
  type RunHookInput,
} from '../../common/hooks';
import { crashPoint } from '../crash-points';
import { currentActivity, Heartbeat } from '../heartbeat';
import { SandboxError } from '../hands/docker-calls';
import { attemptCancellation } from '../hands/attempt-cancellation';
import { earlierAttempt, type EarlierAttempt } from '../hands/earlier-attempt';
import { throwCancelled, toActivityFailure } from '../hands/failures';
import { inputPathOf, journalFor, runBaseOf } from '../hands/journal';
import type { ExecOptions } from '../hands/run-wrapper';
import type { ExecResult } from '../hands/sandbox-commands';
import type { Sandboxes } from '../hands/sandboxes';
import { INLINE_INPUT_MAX } from '../hands/tools/write-file';
import { excerptOf, HOOK_RUNNER, splitHookOutput } from './hook-output';

/** What the runner prints at most: both streams' caps and its header. */
const CAPTURE_BYTES = 256 * 1024;

export interface SandboxHookContext {
  sandboxes: Sandboxes;
  heartbeatEveryMs: number;
}

type Attempt = { result: HookRunResult; lost?: undefined } | { lost: string; result?: undefined };

export async function runSandboxHook(
  ctx: SandboxHookContext,
  input: RunHookInput & { hook: CommandHook },
): Promise<HookRunResult> {
  const activity = currentActivity();
  const heartbeat = new Heartbeat<Record<string, unknown>>(
    activity,
    ctx.heartbeatEveryMs,
    { hookRunId: input.hookRunId, event: input.event },
    false,
  );
  const { lifecycle } = ctx.sandboxes;
  try {
    await lifecycle.ensure(input.sessionId, { operationId: input.operationId });
    let attempt = await attemptHook(ctx, input, activity, heartbeat);
    if (attempt.lost) {
      // The container died under the hook: replace it; a `never` hook then reports itself interrupted.
      await lifecycle.ensure(input.sessionId, { operationId: input.operationId });
      attempt = await attemptHook(ctx, input, activity, heartbeat);
      if (attempt.lost) throw new SandboxError('lost', attempt.lost);
    }
    return attempt.result!;
  } catch (err) {
    throw toActivityFailure(err);
  } finally {
    heartbeat.stop();
  }
}

async function attemptHook(
  ctx: SandboxHookContext,
  input: RunHookInput & { hook: CommandHook },
  activity: Context | undefined,
  heartbeat: Heartbeat<Record<string, unknown>>,
): Promise<Attempt> {
  const { commands, files } = ctx.sandboxes;
  const { sessionId, hookRunId, hook } = input;
  const policy = hook.replay;
  const timeoutS = hook.timeout ?? HOOK_TIMEOUT_DEFAULT_S;
  const timeoutMs = Math.round(timeoutS * 1000);
  const cancellation = attemptCancellation(activity);
  const signal = cancellation.kill;
  if (cancellation.aborted) await throwCancelled(activity);

  const event = JSON.stringify(input.input);
  let args = [event, '', hook.command];
  if (Buffer.byteLength(event) > INLINE_INPUT_MAX) {
    const staged = inputPathOf(hookRunId);
    await files.put(sessionId, [{ path: staged, content: event }]);
    args = ['', staged, hook.command];
  }
  const journal = journalFor({
    toolCallId: hookRunId,
    tool: `hook ${input.event}`,
    replayPolicy: policy,
    summary: hookSummary(input.event, hook),
    command: hook.command,
    ...(activity ? { activityAttempt: activity.info.attempt } : {}),
  });
  const options: ExecOptions = {
    command: HOOK_RUNNER,
    args,
    runBase: runBaseOf(hookRunId),
    timeoutMs,
    maxOutputBytes: CAPTURE_BYTES,
    journal,
    ...(signal ? { signal } : {}),
    onProcess: (process) => {
      crashPoint(`hook: process running (${hookRunId})`);
      heartbeat.merge({ pid: process.pid, attempt: process.attempt }, false);
    },
  };
  const finished = (run: Extract<ExecResult, { kind: 'finished' }>): Attempt => finishedAttempt(input, run, timeoutS);
  const earlier = (asPolicy: typeof policy): Promise<EarlierAttempt> =>
    earlierAttempt({
      commands,
      sessionId,
      toolCallId: hookRunId,
      policy: asPolicy,
      timeoutMs,
      ctx: activity,
      heartbeat,
      cancellation,
    });

  const execute = (opts: ExecOptions): Promise<ExecResult> => cancellation.orAbandoned(commands.exec(sessionId, opts));

  if (policy !== 'never' && activity && activity.info.attempt > 1) {
    // As for a tool call: an earlier attempt that finished gives its result, one running is awaited.
    const found = await earlier('never');
    if (found.kind === 'finished') return finished(found.run);
  }
  crashPoint(`hook: before process start (${hookRunId})`);
  let run: ExecResult = await execute(options);
  crashPoint(`hook: after process end (${hookRunId})`);
  if (run.kind === 'journal-exists') {
    const found = await earlier(policy);
    if (found.kind === 'run') run = await execute({ ...options, journal: { ...journal, mode: 'append' } });
    else if (found.kind === 'finished') run = found.run;
    else return interrupted(input, found, timeoutS);
  }
  if (run.kind === 'executor-lost') {
    const found = await earlier('never');
    if (found.kind === 'finished') run = found.run;
    else if (found.kind === 'run' || policy !== 'never')
      run = await execute({ ...options, journal: { ...journal, mode: 'append' } });
    else return interrupted(input, found, timeoutS);
    if (run.kind === 'executor-lost') throw new SandboxError('unavailable', run.reason);
  }
  if (run.kind === 'lost') return { lost: run.reason };
  if (run.kind !== 'finished') throw new SandboxError('failed', 'the journal appeared while the hook ran');
  if (run.exit.cancelled && signal?.aborted) await throwCancelled(activity);
  return finished(run);
}

/** What a run that finished decided (its exit code and its two streams, read here once). */
function finishedAttempt(
  input: RunHookInput,
  run: Extract<ExecResult, { kind: 'finished' }>,
  timeoutS: number,
): Attempt {
  const { stdout, stderr } = splitHookOutput(run.output);
  const verdict = interpretHookRun(input.event, {
    exitCode: run.exit.exitCode,
    stdout,
    stderr,
    timedOut: run.exit.timedOut,
    timeoutS,
  });
  const out = excerptOf(stdout);
  const err = excerptOf(stderr);
  return {
    result: {
      verdict,
      exitCode: run.exit.exitCode,
      ...(out ? { stdout: out } : {}),
      ...(err ? { stderr: err } : {}),
      ranOn: 'sandbox',
    },
  };
}

/** A `never` hook that started and was cut off before its result was recorded: an error, not a second run. */
function interrupted(
  input: RunHookInput,
  found: Extract<EarlierAttempt, { kind: 'interrupted' }>,
  timeoutS: number,
): Attempt {
  const who = `attempt ${found.attempt}${found.pid ? `, process ${found.pid}` : ''}${found.startedAt ? `, started ${found.startedAt}` : ''}`;
  const reason =
    `interrupted: this hook (replay "never") was already started (${who}) and was cut off before its result was ` +
    'recorded; its outcome is unknown and it was not run again';
  const partial = excerptOf(found.partialOutput.toString('utf8'));
  return {
    result: {
      verdict: interpretHookRun(input.event, { exitCode: -1, stdout: '', stderr: '', interrupted: reason, timeoutS }),
      synthetic: true,
      ...(partial ? { stdout: partial } : {}),
      ranOn: 'sandbox',
    },
  };
}
