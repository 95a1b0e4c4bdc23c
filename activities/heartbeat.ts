/**
 * Heartbeats for long activities (model calls, tool calls, seeding). A heartbeat proves the worker is
 * alive (a dead one is noticed after the activity's heartbeat timeout) and is how cancellation
 * reaches the activity; its details are what the next attempt reads back (`heartbeatDetails`).
 */
import { Context } from '@temporalio/activity';

/** The running activity's context, or undefined when the function is called directly (tests, CLI). */
export function currentActivity(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/**
 * Heartbeats `details` every `everyMs` until `stop()`, and at once unless `sendNow` is false. The SDK
 * throttles what reaches the server; `set` and `merge` replace the details and, by default,
 * heartbeat at once. Without an activity context every method does nothing.
 *
 * Every heartbeat that reaches the server is a write of the workflow's state there. A call that
 * needs nothing recorded in its first half second passes `sendNow: false` (lazy): a call that ends
 * sooner sends none, and a dead worker is still noticed, since the heartbeat timeout runs from the
 * attempt's start until a heartbeat. Until a lazy heartbeat's first one, `set` and `merge` only
 * replace the details (the first one sends the latest); a call that fails in that time and must
 * keep them for its next attempt calls `flush` before it throws. Except on a worker that is behind:
 * when the activity begins more than `LATE_START_MS` after its attempt was scheduled, the attempt's
 * heartbeat timeout has been running for part of that time and the worker's timers may run late
 * too, so the first heartbeat goes out at once.
 */
const LATE_START_MS = 500;
/**
 * A lazy heartbeat's first one goes out this soon (or at the first interval, if sooner): a call
 * that ends sooner writes none, and the rest keep most of the heartbeat timeout (3 s) as slack for
 * a worker whose event loop runs late under load.
 */
const LAZY_FIRST_MS = 500;

export class Heartbeat<D extends object> {
  private current: D;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly first: NodeJS.Timeout | undefined;
  /** A lazy heartbeat before its first one: nothing goes out until its timer. */
  private quiet = false;

  constructor(
    private readonly ctx: Context | undefined,
    everyMs: number,
    details: D,
    sendNow = true,
  ) {
    this.current = details;
    if (!ctx) return;
    if (sendNow || Date.now() - ctx.info.currentAttemptScheduledTimestampMs > LATE_START_MS) ctx.heartbeat(details);
    else {
      this.quiet = true;
      if (everyMs > LAZY_FIRST_MS) this.first = setTimeout(() => this.send(), LAZY_FIRST_MS);
    }
    this.timer = setInterval(() => this.send(), everyMs);
  }

  get details(): D {
    return this.current;
  }

  /** Replaces the details; sends them now unless `send` is false (the timer sends them later). */
  set(details: D, send = true): void {
    this.current = details;
    if (send && !this.quiet) this.ctx?.heartbeat(details);
  }

  merge(more: Partial<D>, send = true): void {
    this.set({ ...this.current, ...more }, send);
  }

  /**
   * Sends the details now if a lazy heartbeat has sent none yet: the server keeps only what a
   * heartbeat delivered, and the next attempt reads it back (`heartbeatDetails`).
   */
  flush(): void {
    if (this.quiet) this.send();
  }

  stop(): void {
    if (this.first) clearTimeout(this.first);
    if (this.timer) clearInterval(this.timer);
  }

  private send(): void {
    this.quiet = false;
    this.ctx?.heartbeat(this.current);
  }
}
