/**
 * Running commands in a session's sandbox container.
 *
 * - `exec` runs a tool command under the run wrapper (`run-wrapper.ts`, `scripts.ts`): as `agent`,
 *   in /workspace, with a timeout enforced inside the container, an output cap, its records in the
 *   journal store, and a process identity (pid = pgid) that `kill` can target later, even from
 *   another process.
 * - `script` runs a short bash script for the hands' own bookkeeping and quick reads.
 * - Commands reach the container through its executor (`executor/`), one long-running process per
 *   sandbox that runs them on request without a `docker exec` round trip each; through `docker exec`
 *   when it cannot start (the result says so) or when made with `executor: false`.
 *
 * The container itself is `sandbox-lifecycle.ts`'s: when it replaces or removes one, it calls
 * `forget` so the next command starts a new executor.
 */
import type Docker from 'dockerode';
import { containerNameOf } from '../../common/sandbox-names';
// egress hook: every command's environment points at the host's proxy (activities/egress/).
import type { SandboxEgressWiring } from '../egress/egress-host';
import { classifyDockerError, dockerCall, SandboxError, statusOf } from './docker-calls';
import { commandRunner, type CommandRun, type CommandRunner } from './executor/runner';
import { SANDBOX_TOOLS } from './executor/sandbox-tools';
import { JOURNAL_WRITER } from './journal-store';
import { parseWrapperOutput, PidLineWatch, wrapperArgv, type ExecOptions, type ProcessIdentity } from './run-wrapper';
import { AGENT_USER, namePrefixOf, sandboxEnv, WORKSPACE_DIR } from './sandbox-spec';
import { SCRIPTS, type RunExit } from './scripts';

export type ExecResult =
  | {
      kind: 'finished';
      exit: RunExit;
      output: Buffer;
      process: ProcessIdentity;
      outputPath: string;
      /** Set when it ran with `docker exec` because the sandbox's executor could not start: why. */
      executorFallback?: string;
    }
  /**
   * The sandbox's executor, or the run wrapper under it, stopped before the command's end reached
   * the hands; the container runs on, so the command may too: its records (`run-records.ts`) tell.
   */
  | { kind: 'executor-lost'; reason: string; process?: ProcessIdentity }
  /** `fresh` mode found an earlier attempt: nothing ran; consult the call's run records. */
  | { kind: 'journal-exists'; journal: string }
  /** The container stopped while the command ran. */
  | { kind: 'lost'; reason: string; process?: ProcessIdentity };

export interface ScriptResult {
  exitCode: number;
  stdout: Buffer;
  stderr: string;
}

export interface SandboxCommandsOptions {
  docker: Docker;
  /** What container names start with (default `agent-`; see `common/sandbox-names.ts`). */
  namePrefix?: string;
  /** egress hook: the proxy wiring whose environment every command gets (none: no way out). */
  egress?: SandboxEgressWiring;
  /** Run commands through a persistent executor per sandbox (default), or `false`: a `docker exec` each. */
  executor?: boolean;
}

/** How long past its own timeout a command may go before the hands stop waiting (a wedged engine or executor). */
const GUARD_MS = 60_000;

export class SandboxCommands {
  private readonly docker: Docker;
  private readonly namePrefix: string;
  private readonly egress: SandboxEgressWiring | undefined;
  private readonly runner: CommandRunner;

  constructor(options: SandboxCommandsOptions) {
    this.docker = options.docker;
    this.namePrefix = namePrefixOf(options.namePrefix);
    this.egress = options.egress;
    this.runner = commandRunner({
      executor: options.executor !== false,
      demux: (stream, stdout, stderr) => this.docker.modem.demuxStream(stream, stdout, stderr),
      createExec: (sessionId, cmd, user, attachStdin) => this.createExec(sessionId, cmd, user, attachStdin),
    });
  }

  /** Runs a command under the run wrapper; see `ExecOptions`. */
  async exec(sessionId: string, options: ExecOptions): Promise<ExecResult> {
    let killing: Promise<void> | undefined;
    const killNow = (identity: ProcessIdentity | undefined) => {
      if (!identity || killing) return;
      killing = this.kill(sessionId, identity.pgid, { runDir: identity.runDir }).catch(() => undefined);
    };
    const watch = new PidLineWatch(options.runBase, (identity) => {
      options.onProcess?.(identity);
      if (options.signal?.aborted) killNow(identity);
    });
    const onAbort = () => killNow(watch.identity);
    options.signal?.addEventListener('abort', onAbort);
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const sinks = {
      stdout: (chunk: Buffer) => {
        stdout.push(chunk);
        watch.push(chunk);
      },
      stderr: (chunk: Buffer) => stderr.push(chunk),
    };
    let run: CommandRun;
    try {
      // The wrapper enforces the timeout; this guard only catches a wedged engine or executor.
      run = await withGuard(
        options.timeoutMs + GUARD_MS,
        this.runner.run(sessionId, wrapperArgv(options), JOURNAL_WRITER, sinks, { exitCode: false }),
      );
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
    await killing;
    return this.resultOf(sessionId, options, run, { stdout: Buffer.concat(stdout), stderr, identity: watch.identity });
  }

  /** Kills a process group in the sandbox: TERM, then KILL after `graceSeconds` (default 2). */
  async kill(sessionId: string, pid: number, options: { graceSeconds?: number; runDir?: string } = {}): Promise<void> {
    if (!Number.isInteger(pid) || pid <= 1) throw new SandboxError('invalid', `refusing to kill process group ${pid}`);
    await this.script(
      sessionId,
      SCRIPTS.killGroup,
      [String(pid), String(options.graceSeconds ?? 2), options.runDir ?? ''],
      { user: JOURNAL_WRITER },
    );
  }

  /**
   * Runs a short bash script in /workspace and returns its output (not journalled, no process
   * identity: for the hands' own bookkeeping and quick reads). As `agent` unless `user` says
   * otherwise (`JOURNAL_WRITER` for the records the agent may not write).
   */
  async script(
    sessionId: string,
    script: string,
    args: string[] = [],
    options: { user?: string } = {},
  ): Promise<ScriptResult> {
    return this.captured(
      sessionId,
      ['bash', '-c', script, 'agent-script', ...args],
      options.user ?? AGENT_USER,
      'sandbox script',
    );
  }

  /** Runs one of the sandbox tools' programs (`agent-sandbox-tools <args>`) and returns its output, as `script`. */
  async tool(sessionId: string, args: string[], options: { user?: string } = {}): Promise<ScriptResult> {
    return this.captured(sessionId, [SANDBOX_TOOLS, ...args], options.user ?? AGENT_USER, 'sandbox tool');
  }

  private async captured(sessionId: string, argv: string[], user: string, what: string): Promise<ScriptResult> {
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const run = await this.runner.run(
      sessionId,
      argv,
      user,
      { stdout: (c) => stdout.push(c), stderr: (c) => stderr.push(c) },
      { exitCode: true },
    );
    if (run.executorLost) throw new SandboxError('unavailable', `${run.executorLost}; a ${what}'s outcome is unknown`);
    return {
      exitCode: run.exitCode ?? -1,
      stdout: Buffer.concat(stdout),
      stderr: Buffer.concat(stderr).toString('utf8'),
    };
  }

  /** The pid of the session's executor in its container, when one is live (diagnostics, tests). */
  executorPid(sessionId: string): Promise<number | undefined> {
    return this.runner.executorPid(sessionId);
  }

  /** The session's container is being replaced or removed: its executor goes with it. */
  forget(sessionId: string): void {
    this.runner.forget(sessionId);
  }

  /** Closes the executors started here (they exit once their commands end). */
  close(): void {
    this.runner.close();
  }

  /** What the wrapper's output says; without a result, whether the container or only the executor was lost. */
  private async resultOf(
    sessionId: string,
    options: ExecOptions,
    run: CommandRun,
    seen: { stdout: Buffer; stderr: Buffer[]; identity: ProcessIdentity | undefined },
  ): Promise<ExecResult> {
    const parsed = parseWrapperOutput(seen.stdout);
    if (parsed.kind === 'journal-exists') return parsed;
    const fallback = run.executorFallback ? { executorFallback: run.executorFallback } : {};
    // With the executor lost mid-output, what arrived may be cut short: the records have it whole.
    if (parsed.kind === 'ended' && !(run.executorLost && parsed.output.length < parsed.exit.outputBytes)) {
      const runDir = `${options.runBase}/${parsed.attempt}`;
      const process: ProcessIdentity = seen.identity ?? {
        pid: parsed.exit.pid,
        pgid: parsed.exit.pid,
        attempt: parsed.attempt,
        runDir,
      };
      return {
        kind: 'finished',
        exit: parsed.exit,
        output: parsed.output,
        process,
        outputPath: parsed.exit.outputPath,
        ...fallback,
      };
    }
    const identity = seen.identity ? { process: seen.identity } : {};
    // The wrapper itself was killed (a signal, or it was gone after it started the command): as
    // with a lost executor, the command may run on and its records tell. An executor killed with
    // its wrapper may report the wrapper's death before its own.
    const signalled = run.exitCode !== undefined && run.exitCode > 128;
    const wrapperKilled = signalled || !!seen.identity;
    // A docker exec's stream also ends when its container stops: Docker may take a while to say so.
    const stopped = await this.containerStopped(sessionId, run.executorLost || signalled ? 10 : 50);
    if (stopped)
      return { kind: 'lost', reason: `the sandbox container stopped while the command ran (${stopped})`, ...identity };
    if (run.executorLost) return { kind: 'executor-lost', reason: run.executorLost, ...identity };
    const said = Buffer.concat(seen.stderr).toString('utf8').trim().slice(0, 500);
    if (wrapperKilled)
      return {
        kind: 'executor-lost',
        reason: `the run wrapper died before it recorded a result (${run.exitCode !== undefined ? `exit status ${run.exitCode}` : 'status unknown'}${said ? `: ${said}` : ''})`,
        ...identity,
      };
    throw new SandboxError('failed', `the run wrapper ended without a result: ${said || 'no output'}`);
  }

  /**
   * Why the container is no longer running, or undefined while it is. Docker updates its state a
   * moment after the exec stream ends, so this looks `looks` times, 100 ms apart; an executor that
   * died alone leaves the container running.
   */
  private async containerStopped(sessionId: string, looks: number): Promise<string | undefined> {
    const container = this.docker.getContainer(containerNameOf(sessionId, this.namePrefix));
    for (let i = 0; i < looks; i++) {
      const state = await dockerCall('inspect the sandbox container', () => container.inspect(), [404]);
      if (!state) return 'removed';
      if (!state.State.Running) return state.State.OOMKilled ? 'out of memory' : `exited ${state.State.ExitCode}`;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return undefined;
  }

  private async createExec(sessionId: string, cmd: string[], user: string, attachStdin: boolean): Promise<Docker.Exec> {
    const container = this.docker.getContainer(containerNameOf(sessionId, this.namePrefix));
    await this.egress?.ready();
    try {
      return await container.exec({
        Cmd: cmd,
        User: user,
        WorkingDir: WORKSPACE_DIR,
        Env: sandboxEnv(this.egress),
        AttachStdout: true,
        AttachStderr: true,
        AttachStdin: attachStdin,
        Tty: false,
      });
    } catch (err) {
      const status = statusOf(err);
      if (status === 404 || status === 409)
        throw new SandboxError(
          'lost',
          `the sandbox container is not running (${status === 404 ? 'removed' : 'stopped'})`,
          { cause: err },
        );
      throw classifyDockerError('run a command in the sandbox', err);
    }
  }
}

/** `running`, or a SandboxError `unavailable` when it has not settled within `guardMs`. */
async function withGuard<T>(guardMs: number, running: Promise<T>): Promise<T> {
  let guard: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    guard = setTimeout(
      () => reject(new SandboxError('unavailable', `the sandbox command did not end ${guardMs} ms after it started`)),
      guardMs,
    );
  });
  try {
    return await Promise.race([running, expired]);
  } finally {
    clearTimeout(guard);
  }
}
