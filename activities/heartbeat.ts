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
 * Heartbeats `details` now and every `everyMs` until `stop()`. The SDK throttles what reaches the
 * server; `set` and `merge` replace the details and, by default, heartbeat at once. Without an
 * activity context every method does nothing.
 */
export class Heartbeat<D extends object> {
  private current: D;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ctx: Context | undefined,
    everyMs: number,
    details: D,
  ) {
    this.current = details;
    if (!ctx) return;
    ctx.heartbeat(details);
    this.timer = setInterval(() => ctx.heartbeat(this.current), everyMs);
  }

  get details(): D {
    return this.current;
  }

  /** Replaces the details; sends them now unless `send` is false (the timer sends them later). */
  set(details: D, send = true): void {
    this.current = details;
    if (send) this.ctx?.heartbeat(details);
  }

  merge(more: Partial<D>): void {
    this.set({ ...this.current, ...more });
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
