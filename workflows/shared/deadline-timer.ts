/**
 * A run's wall-clock deadline as one timer: whether it has passed is known from the timer firing,
 * which is in history, never from comparing the clock — a worker answering a query may run the
 * workflow with the clock of the task before (`stuck-watchdog.ts`), and a deadline decided from it
 * would not replay. The clock sets only the timer's length.
 *
 * Used by the operation (`../operation/budget.ts`) and the coding task (`../coding-task/budget.ts`)
 * in runs that took `DEADLINE_TIMER_PATCH`; earlier runs compare the clock as they did.
 */
import { CancellationScope, patched, sleep } from '@temporalio/workflow';

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

/**
 * The run's deadline timer, made on first use when the run has a deadline and took the patch
 * (asked then, so a run without a deadline records no marker); undefined otherwise.
 */
export function deadlineTimerOf<K extends object>(
  timers: WeakMap<K, DeadlineTimer | null>,
  run: K,
  hasDeadline: boolean,
): DeadlineTimer | undefined {
  if (!hasDeadline) return undefined;
  let timer = timers.get(run);
  if (timer === undefined) {
    timer = patched(DEADLINE_TIMER_PATCH) ? new DeadlineTimer() : null;
    timers.set(run, timer);
  }
  return timer ?? undefined;
}
