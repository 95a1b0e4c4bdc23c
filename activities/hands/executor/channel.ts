/**
 * The hands worker's end of one sandbox executor (the sandbox tools' `executor`, `sandbox-tools.ts`):
 * the hijacked stream of the long-running exec it runs in. Requests go down its stdin as JSON lines;
 * replies come back on its stdout as JSON header lines, some followed by raw output bytes (the
 * protocol is documented in `sandbox-tools/executor.go`). Many commands can run at once; each is one
 * request id.
 *
 * The channel is dead once the stream ends or a reply cannot be parsed: every command still waiting
 * then ends `lost` (its process may well go on in the sandbox; the caller asks the journal), and the
 * pool starts a new executor for the next command.
 */
import { PassThrough, type Duplex } from 'node:stream';
import { SANDBOX_TOOLS } from './sandbox-tools';

/** The executor's argv in the sandbox (also how it is found in `/proc/<pid>/cmdline`). */
export const EXECUTOR_ARGV = [SANDBOX_TOOLS, 'executor'];

export interface CommandSinks {
  stdout(chunk: Buffer): void;
  stderr(chunk: Buffer): void;
}

/** How a command sent to the executor ended. */
export type CommandEnd =
  /** It ran and its output is complete. */
  | { kind: 'exited'; exitCode: number }
  /** The executor could not start it (nothing ran). */
  | { kind: 'not-started'; reason: string }
  /** The executor stopped before the command's end was reported; the command may still run. */
  | { kind: 'lost'; reason: string };

/** A uid:gid to run as, or undefined for the executor's own user. */
export type RunAs = { uid: number; gid: number } | undefined;

type Header =
  | { t: 'ready'; pid: number }
  | { t: 'o' | 'e'; id: number; n: number }
  | { t: 'x'; id: number; code: number }
  | { t: 'f'; id: number; error: string }
  | { t: 'bad-request'; error: string };

interface Pending {
  sinks: CommandSinks;
  resolve(end: CommandEnd): void;
}

const STDERR_KEPT = 2_000;

export class ExecutorChannel {
  /** The executor's pid in the sandbox, once it said it is ready. */
  readonly ready: Promise<number>;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private headerParts: Buffer[] = [];
  private payload: { id: number; stream: 'o' | 'e'; remaining: number } | undefined;
  private stopped: string | undefined;
  private started = false;
  /** Commands whose end it reported. */
  completed = 0;
  private stderrTail = '';
  private onReady!: (pid: number) => void;
  private onStartFailed!: (err: Error) => void;

  constructor(
    private readonly stream: Duplex,
    demux: (stream: NodeJS.ReadableStream, stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream) => void,
  ) {
    this.ready = new Promise<number>((resolve, reject) => {
      this.onReady = resolve;
      this.onStartFailed = reject;
    });
    // A failed start is read through `ready`; nobody may be listening when the channel dies later.
    this.ready.then(
      () => this.holdProcess(),
      () => undefined,
    );
    const stdout = new PassThrough().on('data', (chunk: Buffer) => this.read(chunk));
    const stderr = new PassThrough().on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_KEPT);
    });
    demux(stream, stdout, stderr);
    this.holdProcess();
    // Output already read is delivered first: the demuxer hands it on synchronously, but let it finish.
    stream.on('end', () => setImmediate(() => this.stop('its stream ended')));
    stream.on('close', () => setImmediate(() => this.stop('its stream closed')));
    stream.on('error', (err: Error) => this.stop(`its stream failed: ${err.message}`));
  }

  /** False once the executor is gone (or known to be going). */
  get alive(): boolean {
    return this.stopped === undefined;
  }

  /** Why the executor is gone, with what it last wrote to stderr. */
  get stopReason(): string | undefined {
    return this.stopped;
  }

  /** Runs argv in the sandbox; output goes to `sinks` as it arrives. */
  run(argv: string[], runAs: RunAs, sinks: CommandSinks): Promise<CommandEnd> {
    if (this.stopped) return Promise.resolve({ kind: 'lost', reason: this.stopped });
    const id = this.nextId++;
    return new Promise<CommandEnd>((resolve) => {
      this.pending.set(id, { sinks, resolve });
      this.holdProcess();
      this.stream.write(`${JSON.stringify({ id, argv, ...(runAs ?? {}) })}\n`);
    });
  }

  /** Ends the executor's stdin: it takes no more commands and exits once those it runs have ended. */
  close(): void {
    this.stop('it was closed by the hands');
    this.stream.end();
  }

  private read(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length && !this.stopped) {
      if (this.payload) {
        const take = Math.min(this.payload.remaining, chunk.length - offset);
        const pending = this.pending.get(this.payload.id);
        const part = chunk.subarray(offset, offset + take);
        if (pending) (this.payload.stream === 'o' ? pending.sinks.stdout : pending.sinks.stderr)(part);
        offset += take;
        this.payload.remaining -= take;
        if (this.payload.remaining === 0) this.payload = undefined;
        continue;
      }
      const newline = chunk.indexOf(0x0a, offset);
      if (newline < 0) {
        this.headerParts.push(chunk.subarray(offset));
        return;
      }
      this.headerParts.push(chunk.subarray(offset, newline));
      offset = newline + 1;
      const line = Buffer.concat(this.headerParts).toString('utf8');
      this.headerParts = [];
      let header: Header;
      try {
        header = JSON.parse(line) as Header;
      } catch {
        this.stop(`it wrote something that is not a reply: ${JSON.stringify(line.slice(0, 200))}`);
        this.stream.destroy();
        return;
      }
      this.handle(header);
    }
  }

  private handle(header: Header): void {
    switch (header.t) {
      case 'ready':
        this.started = true;
        this.onReady(header.pid);
        return;
      case 'o':
      case 'e':
        if (header.n > 0) this.payload = { id: header.id, stream: header.t, remaining: header.n };
        return;
      case 'x':
        this.completed += 1;
        this.settle(header.id, { kind: 'exited', exitCode: header.code });
        return;
      case 'f':
        this.settle(header.id, { kind: 'not-started', reason: header.error });
        return;
      case 'bad-request':
        this.stop(`it refused a request: ${header.error}`);
        this.stream.destroy();
    }
  }

  private settle(id: number, end: CommandEnd): void {
    const pending = this.pending.get(id);
    this.pending.delete(id);
    this.holdProcess();
    pending?.resolve(end);
  }

  /** An idle executor does not keep the worker's process alive; one running a command does. */
  private holdProcess(): void {
    const socket = this.stream as Duplex & { ref?: () => void; unref?: () => void };
    if (this.pending.size > 0 || !this.started) socket.ref?.();
    else socket.unref?.();
  }

  private stop(why: string): void {
    if (this.stopped) return;
    const said = this.stderrTail.trim().split('\n').slice(-3).join(' | ');
    this.stopped = `the sandbox executor stopped: ${why}${said ? ` (${said.slice(0, 500)})` : ''}`;
    this.onStartFailed(new Error(this.stopped));
    for (const [id, pending] of this.pending) {
      this.pending.delete(id);
      pending.resolve({ kind: 'lost', reason: this.stopped });
    }
  }
}
