/**
 * One executor per sandbox, started on the sandbox's first command and replaced when it dies: the
 * next command after a death starts a new one. When one cannot start (the sandbox tools missing from
 * the container, the sandbox's pid limit reached, an engine that cannot attach stdin), commands fall
 * back to `docker exec` for `RETRY_AFTER_MS` and are told why, so the tool result can say so.
 */
import type { Duplex } from 'node:stream';
import { SandboxError } from '../docker-calls';
import { EXECUTOR_ARGV, ExecutorChannel } from './channel';

/** What the pool needs from the sandbox manager. */
export interface ExecutorHost {
  /** Starts argv as a long-running exec in the session's container with stdin attached; its hijacked stream. */
  open(sessionId: string, argv: string[]): Promise<Duplex>;
  /** Docker's stdout/stderr demultiplexer (`docker.modem.demuxStream`). */
  demux(stream: NodeJS.ReadableStream, stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream): void;
}

export type Acquired = { channel: ExecutorChannel } | { fallback: string };

/** How long a starting executor may take to say it is ready. */
export const READY_TIMEOUT_MS = 15_000;
/** How long commands use `docker exec` after an executor could not start, before it is tried again. */
export const RETRY_AFTER_MS = 30_000;
/** Executors in a row that died before finishing any command: after so many, it counts as not starting. */
const DEATHS_BEFORE_FALLBACK = 3;

interface Entry {
  channel?: ExecutorChannel;
  /** Executors in a row that died before they finished a command. */
  barrenDeaths?: number;
  starting?: Promise<Acquired>;
  failed?: { reason: string; until: number };
}

export class SandboxExecutors {
  private readonly entries = new Map<string, Entry>();
  /** Executors started so far (a restart counts as a start). */
  starts = 0;

  constructor(
    private readonly host: ExecutorHost,
    private readonly timing: { readyTimeoutMs: number; retryAfterMs: number } = {
      readyTimeoutMs: READY_TIMEOUT_MS,
      retryAfterMs: RETRY_AFTER_MS,
    },
  ) {}

  /**
   * The session's live executor, started if there is none; or why this command must use `docker
   * exec`. Throws the `SandboxError` of a container that is not running (as `docker exec` would).
   */
  acquire(sessionId: string): Promise<Acquired> {
    const entry = this.entries.get(sessionId) ?? {};
    this.entries.set(sessionId, entry);
    if (entry.channel?.alive) return Promise.resolve({ channel: entry.channel });
    if (entry.starting) return entry.starting;
    if (entry.failed && Date.now() < entry.failed.until) return Promise.resolve({ fallback: entry.failed.reason });
    const dead = entry.channel;
    if (dead) {
      // One that keeps dying before it finishes anything (a broken image, a crash on every request)
      // must not turn every call into a lost one: use `docker exec` for a while.
      entry.barrenDeaths = dead.completed > 0 ? 0 : (entry.barrenDeaths ?? 0) + 1;
      entry.channel = undefined;
      if (entry.barrenDeaths >= DEATHS_BEFORE_FALLBACK) {
        entry.barrenDeaths = 0;
        return Promise.resolve(
          this.failed(
            entry,
            `${dead.stopReason} (${DEATHS_BEFORE_FALLBACK} times in a row before it finished a command)`,
          ),
        );
      }
    }
    const starting = this.start(sessionId, entry).finally(() => {
      if (entry.starting === starting) entry.starting = undefined;
    });
    entry.starting = starting;
    return starting;
  }

  /** The session's executor pid in the sandbox, when one is live. */
  async pidOf(sessionId: string): Promise<number | undefined> {
    const channel = this.entries.get(sessionId)?.channel;
    return channel?.alive ? channel.ready : undefined;
  }

  /** Closes the session's executor (its container is being replaced or removed). */
  forget(sessionId: string): void {
    const entry = this.entries.get(sessionId);
    this.entries.delete(sessionId);
    entry?.channel?.close();
    // A start that fails (its container stopped meanwhile) is its caller's error; here it only must
    // not become an unhandled rejection.
    void entry?.starting?.then(
      (acquired) => ('channel' in acquired ? acquired.channel.close() : undefined),
      () => undefined,
    );
  }

  /** Closes every executor (the worker is shutting down). */
  closeAll(): void {
    for (const sessionId of [...this.entries.keys()]) this.forget(sessionId);
  }

  private async start(sessionId: string, entry: Entry): Promise<Acquired> {
    let stream: Duplex;
    try {
      stream = await this.host.open(sessionId, EXECUTOR_ARGV);
    } catch (err) {
      // A container that is not running is the caller's business, as with any command.
      if (err instanceof SandboxError && err.kind === 'lost') throw err;
      return this.failed(entry, `the sandbox executor could not start: ${(err as Error).message}`);
    }
    this.starts += 1;
    const channel = new ExecutorChannel(stream, (s, out, errOut) => this.host.demux(s, out, errOut));
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        channel.ready,
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`it did not say it was ready within ${this.timing.readyTimeoutMs} ms`)),
            this.timing.readyTimeoutMs,
          );
        }),
      ]);
    } catch (err) {
      channel.close();
      return this.failed(entry, `the sandbox executor could not start: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
    // Forgotten while starting (its container is going away, and the executor with it): this command
    // still gets it, nobody else.
    if (this.entries.get(sessionId) === entry) {
      entry.channel = channel;
      entry.failed = undefined;
    }
    return { channel };
  }

  private failed(entry: Entry, reason: string): Acquired {
    entry.failed = { reason, until: Date.now() + this.timing.retryAfterMs };
    return { fallback: reason };
  }
}
