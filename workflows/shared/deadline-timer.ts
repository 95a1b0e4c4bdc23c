/**
 * A run's wall-clock deadline as one timer: whether it has passed is known from the timer firing,
 * which is in history, never from comparing the clock — a worker answering a query may run the
 * workflow with the clock of the task before (`stuck-watchdog.ts`), and a deadline decided from it
 * would not replay. The clock sets only the timer's length.
 *
 * Used by the operation (`../operation/budget.ts`) and the coding task (`../coding-task/budget.ts`)
 * in runs that took `DEADLINE_TIMER_PATCH`; earlier runs compare the clock as they did.
 */
import { CancellationScope, sleep } from '@temporalio/workflow';
import { isPatched } from './patches';

export const DEADLINE_TIMER_PATCH = 'deadline-timer';

export class DeadlineTimer {
  /** Whether the deadline the timer is armed for has passed. */
  passed = false;
  private armedFor: string | undefined;
  private scope: CancellationScope | undefined;

  /**
   * Arms the timer for the deadline at `atMs` (epoch milliseconds). `version` names the deadline in
   * force (it changes when an approval extends it): the same version keeps the timer running; a new
   * one cancels it and arms a new one, not passed.
   */
  arm(atMs: number, version: string): void {
    if (version === this.armedFor) return;
    this.scope?.cancel();
    this.armedFor = version;
    this.passed = false;
    const scope = new CancellationScope();
    this.scope = scope;
    const summary = `deadline: ${new Date(atMs).toISOString()}`;
    scope
      .run(() => sleep(Math.max(1, atMs - Date.now()), { summary }))
      .then(
        () => {
          if (this.armedFor === version) this.passed = true;
        },
        () => undefined,
      );
  }
}

/** What a run's deadline is made of, read at each look (an approval may extend it). */
export interface DeadlineOf {
  /** The deadline in force (as set plus what approvals added), in ms after the start; none without one. */
  limitMs: number | undefined;
  startedAtMs: number;
  /** What approvals added (it only grows): names the deadline in force. */
  addedMs: number;
}

/** The deadline timers of one kind of run (operation, coding task), one per run. */
export class RunDeadlines<K extends object> {
  private readonly timers = new WeakMap<K, DeadlineTimer | null>();

  constructor(private readonly deadlineOf: (run: K) => DeadlineOf) {}

  /**
   * The run's timer armed for the deadline in force: made on first use when the run has a deadline
   * and took the patch (asked then, so a run without a deadline records no marker); undefined
   * otherwise. Called first in the run's first workflow task, before anything is awaited, so the
   * clock it reads is that task's (a deadline already past by then makes a one-millisecond timer).
   */
  timer(run: K): DeadlineTimer | undefined {
    const { limitMs, startedAtMs, addedMs } = this.deadlineOf(run);
    if (limitMs === undefined) return undefined;
    let timer = this.timers.get(run);
    if (timer === undefined) {
      timer = isPatched(DEADLINE_TIMER_PATCH) ? new DeadlineTimer() : null;
      this.timers.set(run, timer);
    }
    timer?.arm(startedAtMs + limitMs, String(addedMs));
    return timer ?? undefined;
  }

  /** Whether the run's deadline has passed: by its timer, or (runs from before it) by the clock. */
  passed(run: K): boolean {
    const timer = this.timer(run);
    if (timer) return timer.passed;
    const { limitMs, startedAtMs } = this.deadlineOf(run);
    return limitMs !== undefined && Date.now() - startedAtMs >= limitMs;
  }
}
