/**
 * A host hook: a command the hands worker defines by name (`AGENT_HOST_HOOKS`), run with bash on the
 * hands host — never in the sandbox and never given the workspace: its working directory is a
 * directory of its own, its environment only PATH, HOME, LANG and the variables its definition
 * names (not the worker's, which holds credentials).
 *
 * Its records survive the worker, like a sandbox run's: under `<dir>/<session>/<hook run id>/`,
 * `started` is written before the command starts, `pid` once it runs (its own process group, so a
 * worker SIGKILL leaves it running), and `exit` by the command's shell when it ends, with its output
 * in `out`. A retried attempt reads them first: a recorded exit is the result; a command still
 * running is waited for; one that started and died without an exit is run again only when its
 * definition says `replay: "safe"` — a `never` hook is reported interrupted instead.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import {
  HOOK_TIMEOUT_DEFAULT_S,
  HOOKS_FAILURE_TYPES,
  interpretHookRun,
  type HookRunResult,
  type HostHookDefinition,
  type HostHookRef,
  type HostHooks,
  type RunHookInput,
} from '../../common/hooks';
import { isSessionId } from '../../common/sandbox-names';
import { crashPoint } from '../crash-points';
import { currentActivity, Heartbeat } from '../heartbeat';
import { throwCancelled } from '../hands/failures';
import { excerptOf, HOOK_RUNNER, splitHookOutput } from './hook-output';

export interface HostHookContext {
  hostHooks: HostHooks;
  /** Where the host hooks' run records are kept. */
  runDir: string;
  /** PATH for host hooks (the worker's). */
  path: string;
  heartbeatEveryMs: number;
}

const POLL_MS = 250;
const KILL_GRACE_MS = 2_000;

interface Records {
  dir: string;
  started: string;
  pid: string;
  out: string;
  exit: string;
  input: string;
}

const recordsIn = (dir: string): Records => ({
  dir,
  started: path.join(dir, 'started'),
  pid: path.join(dir, 'pid'),
  out: path.join(dir, 'out'),
  exit: path.join(dir, 'exit'),
  input: path.join(dir, 'in'),
});

export async function runHostHook(
  ctx: HostHookContext,
  input: RunHookInput & { hook: HostHookRef },
): Promise<HookRunResult> {
  const definition = ctx.hostHooks[input.hook.name];
  if (!definition) {
    const names = Object.keys(ctx.hostHooks);
    throw ApplicationFailure.create({
      type: HOOKS_FAILURE_TYPES.unknownHostHook,
      nonRetryable: true,
      message: `host hook "${input.hook.name}" is not defined on this hands worker (AGENT_HOST_HOOKS defines ${names.length ? names.join(', ') : 'none'})`,
    });
  }
  if (!isSessionId(input.sessionId)) throw ApplicationFailure.nonRetryable(`invalid session id ${input.sessionId}`);
  const records = recordsIn(path.join(ctx.runDir, input.sessionId, input.hookRunId));
  const timeoutS = definition.timeout ?? HOOK_TIMEOUT_DEFAULT_S;
  const activity = currentActivity();
  const heartbeat = new Heartbeat<Record<string, unknown>>(activity, ctx.heartbeatEveryMs, {
    hookRunId: input.hookRunId,
    host: input.hook.name,
  });
  try {
    const earlier = await earlierRun(records, timeoutS, activity);
    if (earlier === 'interrupted' && definition.replay === 'never') return interruptedResult(input, records, timeoutS);
    const exitCode =
      earlier === 'finished' ? readExit(records) : await runCommand(ctx, input, definition, records, timeoutS);
    const { stdout, stderr } = splitHookOutput(readOr(records.out));
    const timedOut = exitCode === 'timed out';
    const code = typeof exitCode === 'number' ? exitCode : -1;
    const out = excerptOf(stdout);
    const err = excerptOf(stderr);
    return {
      verdict: interpretHookRun(input.event, { exitCode: code, stdout, stderr, timedOut, timeoutS }),
      exitCode: code,
      ...(out ? { stdout: out } : {}),
      ...(err ? { stderr: err } : {}),
      ranOn: 'host',
    };
  } finally {
    heartbeat.stop();
  }
}

/**
 * What an earlier attempt left: `none` (nothing, or a run whose command never started), `finished`
 * (its exit is recorded), or `interrupted` (it started and is gone without an exit). A run still
 * alive is waited for, up to its timeout and 15 s, then killed and called interrupted.
 */
async function earlierRun(
  records: Records,
  timeoutS: number,
  activity: ReturnType<typeof currentActivity>,
): Promise<'none' | 'finished' | 'interrupted'> {
  if (!fs.existsSync(records.started)) return 'none';
  const deadline = Date.now() + timeoutS * 1000 + 15_000;
  for (;;) {
    if (fs.existsSync(records.exit)) return 'finished';
    const pid = Number(readOr(records.pid).toString('utf8').split(' ')[0]);
    if (!pid || !alive(records)) return 'interrupted';
    if (activity?.cancellationSignal.aborted || Date.now() > deadline) {
      killGroup(pid, 'SIGKILL');
      if (activity?.cancellationSignal.aborted) await throwCancelled(activity);
      return 'interrupted';
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Runs the command once (its records made fresh); its exit code, or `timed out`. */
async function runCommand(
  ctx: HostHookContext,
  input: RunHookInput,
  definition: HostHookDefinition,
  records: Records,
  timeoutS: number,
): Promise<number | 'timed out'> {
  fs.rmSync(records.dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(records.dir, 'home'), { recursive: true, mode: 0o700 });
  fs.writeFileSync(records.input, JSON.stringify(input.input));
  // The intent, on disk before the command can start: a retry never mistakes "started" for "never ran".
  writeAtomically(
    records.started,
    JSON.stringify({ at: new Date().toISOString(), attempt: currentActivity()?.info.attempt ?? 1 }),
  );
  const shell =
    'bash -c "$1" agent-host-hook "" "$2" "$3" > "$4" 2>&1; c=$?; printf \'%s\' "$c" > "$5.tmp" && mv -f "$5.tmp" "$5"';
  const child = spawn(
    'bash',
    ['-c', shell, 'agent-host-run', HOOK_RUNNER, records.input, definition.command, records.out, records.exit],
    {
      cwd: path.join(records.dir, 'home'),
      env: { PATH: ctx.path, HOME: path.join(records.dir, 'home'), LANG: 'C.UTF-8', ...definition.env },
      detached: true,
      stdio: 'ignore',
    },
  );
  const ended = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error('the host hook could not be started (bash missing?)');
  writeAtomically(records.pid, `${pid} ${startTimeOf(pid) ?? ''}`);
  crashPoint(`hook: process running (${input.hookRunId})`);
  const activity = currentActivity();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(pid, 'SIGTERM');
    setTimeout(() => killGroup(pid, 'SIGKILL'), KILL_GRACE_MS).unref();
  }, timeoutS * 1000);
  const onAbort = () => killGroup(pid, 'SIGKILL');
  activity?.cancellationSignal.addEventListener('abort', onAbort);
  try {
    await ended;
  } finally {
    clearTimeout(timer);
    activity?.cancellationSignal.removeEventListener('abort', onAbort);
  }
  crashPoint(`hook: after process end (${input.hookRunId})`);
  if (activity?.cancellationSignal.aborted) await throwCancelled(activity);
  if (timedOut) {
    writeAtomically(records.exit, 'timed out');
    return 'timed out';
  }
  return readExit(records);
}

function readExit(records: Records): number | 'timed out' {
  const text = readOr(records.exit).toString('utf8').trim();
  if (text === 'timed out') return 'timed out';
  const code = Number(text);
  return Number.isInteger(code) ? code : -1;
}

function interruptedResult(input: RunHookInput, records: Records, timeoutS: number): HookRunResult {
  const started = readOr(records.started).toString('utf8');
  const reason =
    `interrupted: this host hook (replay "never") was already started (${started || 'no record of when'}) and was cut ` +
    'off before its result was recorded; its outcome is unknown and it was not run again';
  const partial = excerptOf(readOr(records.out).toString('utf8'));
  return {
    verdict: interpretHookRun(input.event, { exitCode: -1, stdout: '', stderr: '', interrupted: reason, timeoutS }),
    synthetic: true,
    ...(partial ? { stdout: partial } : {}),
    ranOn: 'host',
  };
}

/** Whether the recorded process is the one still running (its kernel start time guards against a reused pid). */
function alive(records: Records): boolean {
  const [pidText, startTime] = readOr(records.pid).toString('utf8').trim().split(' ');
  const pid = Number(pidText);
  if (!pid) return false;
  const now = startTimeOf(pid);
  return now !== undefined && (!startTime || now === startTime);
}

/** The process's start time in clock ticks since boot (`/proc/<pid>/stat` field 22); undefined when it is gone. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; the fields after it do not.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const state = fields[0];
    return state === 'Z' ? undefined : fields[19];
  } catch {
    return undefined;
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

function readOr(file: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch {
    return Buffer.alloc(0);
  }
}

function writeAtomically(file: string, text: string): void {
  fs.writeFileSync(`${file}.tmp`, text);
  fs.renameSync(`${file}.tmp`, file);
}
