/**
 * Programs the hands worker runs on its own host (the workspace quota's `mkfs.ext4`, `debugfs`,
 * `losetup`), through a helper process: the sandbox tools' `executor` (`sandbox-tools/executor.go`,
 * the protocol sandboxes use), started once as the worker's child and spoken to over its pipes.
 *
 * Why a helper: Node starts a program by forking the whole worker process, and a loaded worker is
 * large (a gigabyte with 200 operations at once), so each start cost about 20 ms of CPU on the
 * worker's event loop — in the bench's 200 × 20 run, six starts per operation were a fifth of the
 * worker's CPU. The helper is a few megabytes; its forks cost next to nothing.
 *
 * A command the helper cannot take (the helper would not start, or could not start the program) is
 * run the plain way, so a command never fails because the helper is missing; one lost in flight
 * (the helper died under it) is reported as failed, since it may have run (each caller's command is
 * safe to run again).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { Duplex } from 'node:stream';
import { promisify } from 'node:util';
import { ExecutorChannel } from './executor/channel';

const execFileAsync = promisify(execFile);

export interface HostCommandResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** Runs a program on the hands host; resolves with its output and exit status. */
export type HostCommandRunner = (file: string, args: string[]) => Promise<HostCommandResult>;

/** Each command its own child of this process (what a small process, such as the CLI, does). */
export const spawnDirectly: HostCommandRunner = async (file, args) => {
  try {
    const { stdout, stderr } = await execFileAsync(file, args, { encoding: 'utf8' });
    return { stdout, stderr, exitCode: 0 };
  } catch (err) {
    const failed = err as { code?: unknown; stdout?: string; stderr?: string; message: string };
    // A program that could not be started at all has a string code (ENOENT, EACCES).
    if (typeof failed.code !== 'number') throw err;
    return { stdout: failed.stdout ?? '', stderr: failed.stderr ?? '', exitCode: failed.code };
  }
};

/** How long the helper may take to say it is ready before commands are run the plain way. */
const READY_TIMEOUT_MS = 10_000;
/** How long commands are run the plain way after the helper could not start, before it is tried again. */
const RETRY_AFTER_MS = 60_000;

/**
 * The helper, started on the first command and again after it died. `toolsPath` is the sandbox
 * tools binary on this host (the one mounted into sandboxes).
 */
export class HostCommandHelper {
  private channel: ExecutorChannel | undefined;
  private starting: Promise<ExecutorChannel | undefined> | undefined;
  private failedAt: number | undefined;

  constructor(private readonly toolsPath: string) {}

  readonly run: HostCommandRunner = async (file, args) => {
    const channel = await this.acquire();
    if (!channel) return spawnDirectly(file, args);
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const end = await channel.run([file, ...args], undefined, {
      stdout: (chunk) => stdout.push(chunk),
      stderr: (chunk) => stderr.push(chunk),
    });
    if (end.kind === 'not-started') return spawnDirectly(file, args);
    if (end.kind === 'lost') throw new Error(`${file} ${args.join(' ')}: its outcome is unknown (${end.reason})`);
    return {
      stdout: Buffer.concat(stdout).toString('utf8'),
      stderr: Buffer.concat(stderr).toString('utf8'),
      exitCode: end.exitCode,
    };
  };

  /** Ends the helper (it exits once the commands it runs have ended). */
  close(): void {
    this.channel?.close();
    this.channel = undefined;
  }

  private acquire(): Promise<ExecutorChannel | undefined> {
    if (this.channel?.alive) return Promise.resolve(this.channel);
    if (this.failedAt !== undefined && Date.now() - this.failedAt < RETRY_AFTER_MS) return Promise.resolve(undefined);
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async start(): Promise<ExecutorChannel | undefined> {
    let child: ChildProcess;
    try {
      child = spawn(this.toolsPath, ['executor'], { stdio: ['pipe', 'pipe', 'pipe'] });
    } catch {
      this.failedAt = Date.now();
      return undefined;
    }
    const { stdin, stdout, stderr } = child;
    if (!stdin || !stdout || !stderr) {
      this.failedAt = Date.now();
      return undefined;
    }
    // The channel's stream: requests to the helper's stdin, replies from its stdout.
    const stream = new Duplex({
      write: (chunk: Buffer, _encoding, done) => stdin.write(chunk, done),
      final: (done) => stdin.end(done),
      read: () => undefined,
    });
    stdout.on('data', (chunk: Buffer) => stream.push(chunk));
    stdout.on('end', () => stream.push(null));
    stdin.on('error', (err) => stream.destroy(err));
    child.on('error', (err) => stream.destroy(err));
    // An idle helper does not keep the worker's process alive (the channel says when it is idle).
    Object.assign(stream, {
      ref: () => [child, stdin, stdout, stderr].forEach((handle) => (handle as { ref?: () => void }).ref?.()),
      unref: () => [child, stdin, stdout, stderr].forEach((handle) => (handle as { unref?: () => void }).unref?.()),
    });
    const channel = new ExecutorChannel(stream, (replies, out, errors) => {
      replies.pipe(out);
      stderr.pipe(errors);
    });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the host command helper did not start in time')), READY_TIMEOUT_MS);
    });
    try {
      await Promise.race([channel.ready, timedOut]);
      this.channel = channel;
      return channel;
    } catch {
      child.kill('SIGKILL');
      this.failedAt = Date.now();
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}
