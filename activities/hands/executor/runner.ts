/**
 * How the sandbox manager runs a command in a container: through the sandbox's executor
 * (`pool.ts`), or with one `docker exec` (create, start, attach; an inspect for the exit status)
 * when the executor is switched off or could not start. Either way the command runs as the given
 * user, in /workspace, with the container's environment, stdin closed, and its stdout and stderr
 * delivered as they arrive.
 */
import { PassThrough, type Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { classifyDockerError, dockerCall, SandboxError } from '../docker-calls';
import type { CommandSinks, RunAs } from './channel';
import { SandboxExecutors } from './pool';

export type { CommandSinks } from './channel';

export interface CommandRun {
  /** The exit status, when the command's end was seen (with `docker exec`: only when asked for). */
  exitCode?: number;
  /** The executor stopped before the command's end was reported: why. The command may still run. */
  executorLost?: string;
  /** Why the command ran with `docker exec` although the executor is on. */
  executorFallback?: string;
}

export interface CommandRunner {
  /** Runs argv in the session's container as `user` (uid:gid) until its output ends. */
  run(
    sessionId: string,
    argv: string[],
    user: string,
    sinks: CommandSinks,
    options: { exitCode: boolean },
  ): Promise<CommandRun>;
  executorPid(sessionId: string): Promise<number | undefined>;
  /** The session's container is being replaced or removed: drop its executor. */
  forget(sessionId: string): void;
  close(): void;
}

export interface RunnerHost {
  /** Use the executor (else every command is a `docker exec`). */
  executor: boolean;
  /** The manager's exec factory: as `user`, in /workspace, with the sandbox's environment. */
  createExec(sessionId: string, cmd: string[], user: string, attachStdin: boolean): Promise<Docker.Exec>;
  demux(stream: NodeJS.ReadableStream, stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream): void;
}

/** The user the executor itself runs as: commands for it need no switch. */
const EXECUTOR_USER = '0:0';

export function commandRunner(host: RunnerHost): CommandRunner {
  const executors = host.executor
    ? new SandboxExecutors({
        demux: host.demux,
        open: async (sessionId, argv) => {
          const exec = await host.createExec(sessionId, argv, EXECUTOR_USER, true);
          return (await dockerCall('start the sandbox executor', () =>
            exec.start({ hijack: true, stdin: true }),
          )) as Duplex;
        },
      })
    : undefined;
  return {
    async run(sessionId, argv, user, sinks, options) {
      const acquired = executors ? await executors.acquire(sessionId) : undefined;
      if (!acquired || 'fallback' in acquired) {
        const run = await dockerExec(host, sessionId, argv, user, sinks, options.exitCode);
        return acquired ? { ...run, executorFallback: acquired.fallback } : run;
      }
      const end = await acquired.channel.run(argv, runAsOf(user), sinks);
      switch (end.kind) {
        case 'exited':
          return { exitCode: end.exitCode };
        case 'not-started':
          throw new SandboxError('unavailable', `could not start a command in the sandbox: ${end.reason}`);
        case 'lost':
          return { executorLost: end.reason };
      }
    },
    executorPid: async (sessionId) => executors?.pidOf(sessionId),
    forget: (sessionId) => executors?.forget(sessionId),
    close: () => executors?.closeAll(),
  };
}

function runAsOf(user: string): RunAs {
  if (user === EXECUTOR_USER) return undefined;
  const match = /^(\d+):(\d+)$/.exec(user);
  if (!match) throw new SandboxError('invalid', `not a uid:gid: ${user}`);
  return { uid: Number(match[1]), gid: Number(match[2]) };
}

async function dockerExec(
  host: RunnerHost,
  sessionId: string,
  argv: string[],
  user: string,
  sinks: CommandSinks,
  wantExitCode: boolean,
): Promise<CommandRun> {
  const exec = await host.createExec(sessionId, argv, user, false);
  const stream = await dockerCall('start a command in the sandbox', () => exec.start({ hijack: true, stdin: false }));
  const out = new PassThrough().on('data', (chunk: Buffer) => sinks.stdout(chunk));
  const err = new PassThrough().on('data', (chunk: Buffer) => sinks.stderr(chunk));
  await new Promise<void>((resolve, reject) => {
    host.demux(stream, out, err);
    stream.on('end', () => resolve());
    stream.on('close', () => resolve());
    stream.on('error', (e) => reject(classifyDockerError('read a sandbox command', e)));
  });
  if (!wantExitCode) return {};
  const info = await dockerCall('inspect a sandbox command', () => exec.inspect());
  return { exitCode: info.ExitCode ?? -1 };
}
