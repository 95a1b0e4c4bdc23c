/**
 * The hands worker's side of the egress proxy: forks the proxy process (`proxy-process.ts`), tells it
 * each sandbox's policy, restarts it when it dies (re-serving every socket), and collects the records
 * of every request so each tool call returns the requests it made.
 *
 * Records are handed out once (`drain`): concurrent calls of one sandbox share its socket, so a record
 * is counted in exactly one call's summary, and the operation's total is exact.
 */
import { fork, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import type { EgressRecord } from '../../common/egress';
import type { ProxyMessage, SupervisorMessage } from './proxy-process';
import type { ResolvedEgress } from './proxy-rules';

const PROXY_ENTRY = path.join(__dirname, 'proxy-process.ts');
/** Where `tsx` resolves from. */
const PROJECT_DIR = path.resolve(__dirname, '..', '..');

interface Served {
  socketPath: string;
  policy: ResolvedEgress;
  records: EgressRecord[];
  /** The proxy process that said it serves exactly `confirmedAs` (socket and policy) here. */
  confirmedBy?: ChildProcess;
  confirmedAs?: string;
}

/** How long a call waits for the proxy to answer a flush before taking the records it has. */
const FLUSH_TIMEOUT_MS = 5_000;
/** How long a call waits for the proxy to serve its socket. */
const SERVE_TIMEOUT_MS = 10_000;

/**
 * A `serve` sent and not yet answered. The proxy answers each `serve` of a key once, in order; a
 * waiter is answered only by the process it was sent to, and leaves its key's queue when answered,
 * when it times out, or when that process dies — so an answer never goes to a call that stopped
 * waiting, and a late one never to the next call.
 */
interface Waiter {
  child: ChildProcess;
  settle(failure?: Error): void;
}

export class ProxySupervisor {
  private child: ChildProcess | undefined;
  private readonly served = new Map<string, Served>();
  private readonly waiting = new Map<string, Waiter[]>();
  /** Flushes sent and not yet answered, per key, with the process each was sent to. */
  private readonly flushing = new Map<string, Array<{ child: ChildProcess; done: () => void }>>();
  /** How many times the proxy process has stopped (a call compares it before and after). */
  deaths = 0;
  private closed = false;

  constructor(
    private readonly onExit: (line: string) => void = () => undefined,
    /** The worker's environment, of which the proxy gets only `PATH` and `NODE_EXTRA_CA_CERTS`. */
    private readonly hostEnv: Readonly<Record<string, string | undefined>> = {},
  ) {}

  /** The proxy process id (tests kill it to prove a restart). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the proxy process now, so that the first call served does not wait for it to boot. */
  start(): void {
    if (!this.closed) this.ensureChild();
  }

  /**
   * Serves `policy` on `socketPath` for `key`, starting the proxy process if needed; resolves when
   * listening. A sandbox's calls mostly repeat its policy: when the running proxy process has
   * confirmed this very socket and policy, nothing is sent (no round trip per tool call).
   */
  async serve(key: string, socketPath: string, policy: ResolvedEgress): Promise<void> {
    const as = JSON.stringify([socketPath, policy]);
    const child = this.ensureChild();
    let entry = this.served.get(key);
    if (entry?.confirmedBy === child && entry.confirmedAs === as) return;
    if (entry) {
      entry.policy = policy;
      entry.socketPath = socketPath;
    } else this.served.set(key, (entry = { socketPath, policy, records: [] }));
    // Until this change is confirmed, no concurrent call of the sandbox takes the old one as served.
    entry.confirmedAs = undefined;
    await this.sendAndWait(child, key, { type: 'serve', key, socketPath, policy });
    if (this.served.get(key) === entry && this.child === child && entry.policy === policy) {
      entry.confirmedBy = child;
      entry.confirmedAs = as;
    }
  }

  /** The records of `key` not yet handed out. */
  drain(key: string): EgressRecord[] {
    const entry = this.served.get(key);
    if (!entry) return [];
    const records = entry.records;
    entry.records = [];
    return records;
  }

  /**
   * Waits until the proxy has sent the records of `key`'s connections that were open (it answers
   * once they closed, or after half a second for one a left-over process holds): after a call's
   * command ended, its records are then all in for `drain`. Never fails: without an answer within a
   * few seconds (a proxy that died, which the call then learns from `deaths`), it returns anyway.
   */
  flush(key: string): Promise<void> {
    const child = this.child;
    if (!child || !this.served.has(key)) return Promise.resolve();
    // Its channel closed before its exit was seen (the two arrive in either order): the call waits
    // for the exit, so that it learns of the death from `deaths`.
    if (!child.connected) return this.exited(child);
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const list = this.flushing.get(key);
        const at = list?.findIndex((waiter) => waiter.done === done) ?? -1;
        if (at >= 0) list!.splice(at, 1);
        resolve();
      }, FLUSH_TIMEOUT_MS);
      this.flushing.set(key, [...(this.flushing.get(key) ?? []), { child, done }]);
      child.send({ type: 'flush', key } satisfies SupervisorMessage);
    });
  }

  /** `child`'s answer to its oldest unanswered flush of `key`. */
  private flushed(child: ChildProcess, key: string): void {
    const list = this.flushing.get(key);
    const at = list?.findIndex((waiter) => waiter.child === child) ?? -1;
    if (at >= 0) list!.splice(at, 1)[0]!.done();
  }

  /** Resolves once `child` has exited (at once if it has), or after the flush timeout. */
  private exited(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, FLUSH_TIMEOUT_MS);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  close(key: string): void {
    this.served.delete(key);
    if (this.child?.connected) this.child.send({ type: 'close', key } satisfies SupervisorMessage);
  }

  /** Stops the proxy process for good (worker shutdown). */
  shutdown(): void {
    this.closed = true;
    this.child?.kill('SIGTERM');
    this.child = undefined;
  }

  private sendAndWait(child: ChildProcess, key: string, message: SupervisorMessage): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        child,
        settle: (failure) => {
          clearTimeout(timer);
          const list = this.waiting.get(key) ?? [];
          const at = list.indexOf(waiter);
          if (at >= 0) list.splice(at, 1);
          if (list.length === 0) this.waiting.delete(key);
          if (failure) reject(failure);
          else resolve();
        },
      };
      const timer = setTimeout(
        () => waiter.settle(new Error(`the egress proxy did not start listening within ${SERVE_TIMEOUT_MS / 1000} s`)),
        SERVE_TIMEOUT_MS,
      );
      this.waiting.set(key, [...(this.waiting.get(key) ?? []), waiter]);
      child.send(message);
    });
  }

  /** The answer of `child` to its oldest unanswered `serve` of `key`. */
  private answered(child: ChildProcess, key: string, failure?: Error): void {
    this.waiting
      .get(key)
      ?.find((waiter) => waiter.child === child)
      ?.settle(failure);
  }

  private ensureChild(): ChildProcess {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null && this.child.connected)
      return this.child;
    const child = fork(PROXY_ENTRY, [], {
      execArgv: ['--import', 'tsx'],
      cwd: PROJECT_DIR,
      // The proxy needs no environment of the worker: the secrets it uses arrive in its policies.
      env: { PATH: this.hostEnv.PATH ?? '', NODE_EXTRA_CA_CERTS: this.hostEnv.NODE_EXTRA_CA_CERTS ?? '' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child = child;
    child.on('message', (message: ProxyMessage) => {
      if (message.type === 'record') this.served.get(message.key)?.records.push(message.record);
      else if (message.type === 'flushed') this.flushed(child, message.key);
      else if (message.type === 'failed') this.answered(child, message.key, new Error(message.message));
      else this.answered(child, message.key);
    });
    // A message sent as it dies fails; its exit (below) is what the calls learn from.
    child.on('error', () => undefined);
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = undefined;
      if (this.closed) return;
      this.deaths += 1;
      this.onExit(`egress proxy stopped (${signal ?? `exit ${code}`}); restarting it`);
      // Flushes it was asked for it never answers: their calls go on now (and learn of the death).
      for (const [key, list] of [...this.flushing]) {
        const others = list.filter((waiter) => waiter.child !== child);
        for (const waiter of list) if (waiter.child === child) waiter.done();
        this.flushing.set(key, others);
      }
      // What it was asked and never answered, it never will: those calls fail now (and retry).
      for (const list of [...this.waiting.values()])
        for (const waiter of list.filter((w) => w.child === child))
          waiter.settle(
            new Error(`the egress proxy stopped (${signal ?? `exit ${code}`}) before it served the socket`),
          );
      // Restart at once so sandboxes are not left without their way out.
      if (this.served.size) {
        const next = this.ensureChild();
        for (const [key, entry] of this.served)
          void this.sendAndWait(next, key, {
            type: 'serve',
            key,
            socketPath: entry.socketPath,
            policy: entry.policy,
          }).catch(() => undefined);
      }
    });
    child.unref();
    (child.channel as { unref?: () => void } | undefined)?.unref?.();
    return child;
  }
}
