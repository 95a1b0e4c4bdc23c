/**
 * The stuck watchdog of a workflow run (limits and verdicts: `common/stuck.ts`), shared by the
 * operation (`../operation/stuck.ts`) and the coding task (`../coding-task/stuck.ts`).
 *
 * An activity run under the watchdog that has not finished within `notStartedMs` is looked at: the
 * brain's `probePendingActivity` asks the server about it (state, attempt, last failure, pollers of
 * its queue). The verdict — no worker polls the queue, not started although workers poll it,
 * retrying past the limits — becomes the run's `stuck` state, looked at again every `recheckMs` and
 * cleared as soon as the cause goes away (a worker starts polling, the retry succeeds, the activity
 * finishes). The watched activity itself is untouched: same id, same options, never scheduled twice.
 */
import { CancellationScope, condition, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import { isPatched } from './patches';
import type { OpsActivities, PendingActivityProbe, StuckLimits, StuckState } from '../../common/stuck';
import { PROBE_ACTIVITY_OPTIONS } from './policies';

/** The run a watchdog watches for: its limits, and its stuck state (read, and set with what changed shown). */
export interface StuckSubject {
  readonly limits: StuckLimits;
  readonly stuck: Readonly<StuckState> | undefined;
  /** Sets or clears the stuck state and shows the change (search attribute, current details). */
  setStuck(stuck: StuckState | undefined): void;
}

export interface WatchTarget {
  /** The watched activity's id (it must be set explicitly to be found). */
  activityId: string;
  taskQueue: string;
  /** What the run waits on, in words (`tool bash: npm test`, `model turn 3`). */
  waitingOn: string;
  /** The hands host the queue belongs to, when it is a host's own queue. */
  host?: string;
}

/** Most time between two looks at an activity (the wait doubles up to this while nothing changes). */
const CALM_RECHECK_CAP_MS = 10 * 60_000;

/** An activity the run waits on, and since when. */
export interface Watched {
  target: WatchTarget;
  since: number;
  /** When to look at it next (the first look is `notStartedMs` after it was scheduled). */
  nextLookAt: number;
  /** The wait before the look after next (doubles while the verdict stays the same). */
  wait: number;
  /** The watchdog's sleeps begun before this activity was watched (with the patch: who a wake looks at). */
  sleepsBefore: number;
}

/**
 * Watchdogs of runs that took this patch decide nothing from the clock. A worker that keeps a run
 * in its cache applies new events to it when a query reaches it through the normal queue (the run
 * lost its sticky queue: a retried activity released it, or a sticky task timed out); the workflow
 * code then runs with the clock of the workflow task before, and what it decides from `Date.now()`
 * may differ from a replay of the same events, which sees the clock of the task that recorded them:
 * a non-determinism error that no retry clears. Such a watchdog uses the clock only for how long to
 * sleep; each wake looks at every activity it watches, and how long an activity has waited comes
 * from the probe's recorded result.
 */
export const WATCHDOG_CLOCK_FREE_PATCH = 'stuck-watchdog-clock-free';

/**
 * Watchdogs of runs that took this patch (as well as the clock-free one) stay awake for new work
 * and outlive a failed look:
 *  - A calm sleep (every activity it was begun for had been looked at already, so it may last up to
 *    `CALM_RECHECK_CAP_MS`) ends when another activity is watched: a model call retrying after a
 *    twenty-minute test run is looked at `notStartedMs` after it was scheduled, not when the test
 *    run's next look would have been due. Which sleeps are calm comes from the looks' recorded
 *    results, never from the clock.
 *  - A probe that failed past its retries (the server unreachable for a while) is tried again
 *    `recheckMs` later instead of ending the watchdog for the rest of the run.
 */
export const WATCHDOG_AWAKE_PATCH = 'stuck-watchdog-awake';

/**
 * The run's one watchdog: it sleeps while nothing is pending (no timer), and otherwise until the
 * earliest look is due. Its timer is never cancelled when an activity finishes early — it simply
 * looks at whatever is pending when it wakes — so a healthy run pays one timer per `notStartedMs`
 * of work, not one per activity.
 */
export class Watchdog {
  private readonly watched = new Set<Watched>();
  private started = false;
  /** Whether the run took `WATCHDOG_CLOCK_FREE_PATCH` (asked once, when the first activity is watched). */
  private clockFree = false;
  /** Sleeps begun so far (with the patch). */
  private sleeps = 0;
  /** Whether the run took `WATCHDOG_AWAKE_PATCH` (asked with the clock-free one). */
  private awake = false;
  /** The current sleep is calm, and an activity was watched since it began (with `awake`). */
  private wakeUp = false;
  private calmSleep = false;

  constructor(private readonly subject: StuckSubject) {}

  /**
   * Runs `run` (which schedules the activity `target.activityId`) under the watchdog. The caller
   * clears a stuck state on `target` once this returns (after its own bookkeeping).
   */
  async watch<T>(target: WatchTarget, run: () => Promise<T>): Promise<T> {
    const entry = this.add(target);
    try {
      return await run();
    } finally {
      this.watched.delete(entry);
    }
  }

  private add(target: WatchTarget): Watched {
    const now = Date.now();
    const entry: Watched = {
      target,
      since: now,
      nextLookAt: now + this.subject.limits.notStartedMs,
      wait: 0,
      sleepsBefore: this.sleeps,
    };
    this.watched.add(entry);
    if (this.calmSleep) this.wakeUp = true;
    if (!this.started) {
      this.started = true;
      this.clockFree = isPatched(WATCHDOG_CLOCK_FREE_PATCH);
      this.awake = this.clockFree && isPatched(WATCHDOG_AWAKE_PATCH);
      const loop = this.clockFree ? () => this.runClockFree() : () => this.run();
      // Runs for the rest of the run; the workflow may end or continue as new with its timer pending.
      void CancellationScope.nonCancellable(loop).catch(() => undefined);
    }
    return entry;
  }

  /** Without the patch: wakes, and looks at the activities whose look is due by the clock. */
  private async run(): Promise<never> {
    for (;;) {
      await condition(() => this.watched.size > 0);
      const due = Math.min(...[...this.watched].map((entry) => entry.nextLookAt));
      if (due > Date.now()) {
        await sleep(due - Date.now());
        continue;
      }
      for (const entry of [...this.watched]) {
        if (entry.nextLookAt <= Date.now()) await this.look(entry);
      }
    }
  }

  /**
   * With the patch: sleeps until the earliest look is due (only the timer's length comes from the
   * clock), then looks at every activity still watched that was watched when the sleep began — the
   * timer firing, which is in history, is the decision. One watched only since waits for the next
   * sleep, which its own look is due by: a healthy run's steps come and go between wakes unprobed.
   */
  private async runClockFree(): Promise<never> {
    for (;;) {
      await condition(() => this.watched.size > 0);
      const due = Math.min(...[...this.watched].map((entry) => entry.nextLookAt));
      const sleepNumber = ++this.sleeps;
      const ms = Math.max(1, due - Date.now());
      if (this.awake) {
        // Calm: every activity this sleep is for was looked at before (`wait` is set only by a look).
        this.calmSleep = [...this.watched].every((entry) => entry.wait > 0);
        this.wakeUp = false;
        const woken = await condition(() => this.wakeUp, ms);
        this.calmSleep = false;
        this.wakeUp = false;
        // Woken for a new activity: sleep again, until the earliest look now due.
        if (woken) continue;
      } else {
        await sleep(ms);
      }
      for (const entry of [...this.watched]) {
        if (this.watched.has(entry) && entry.sleepsBefore < sleepNumber) await this.look(entry);
      }
    }
  }

  private async look(entry: Watched): Promise<void> {
    const { subject, clockFree } = this;
    const { target } = entry;
    const { limits } = subject;
    const recheckMs = limits.recheckMs ?? Math.min(limits.notStartedMs, 60_000);
    const { probePendingActivity } = proxyActivities<OpsActivities>({
      ...PROBE_ACTIVITY_OPTIONS,
      summary: `stuck check: ${target.waitingOn}`,
    });
    const info = workflowInfo();
    const probing = probePendingActivity({
      workflowId: info.workflowId,
      runId: info.runId,
      activityId: target.activityId,
      taskQueue: target.taskQueue,
      ...(clockFree ? { sinceMs: entry.since } : {}),
    });
    let probe: PendingActivityProbe;
    if (this.awake) {
      try {
        probe = await probing;
      } catch {
        // Nothing is known: the state stays as it was, and the activity is looked at again soon.
        entry.wait = Math.max(entry.wait, recheckMs);
        entry.nextLookAt = Date.now() + recheckMs;
        return;
      }
    } else {
      probe = await probing;
    }
    if (!this.watched.has(entry)) return;
    const elapsedMs = clockFree ? (probe.elapsedMs ?? 0) : Date.now() - entry.since;
    if (clockFree && elapsedMs < limits.notStartedMs) {
      // Looked at before its limit (the wake was for another activity): its first look is still ahead.
      entry.nextLookAt = entry.since + limits.notStartedMs;
      return;
    }
    const reason = stuckReason(probe, target, limits, elapsedMs);
    if (reason) {
      const same = subject.stuck?.reason === reason.reason;
      subject.setStuck({
        ...reason,
        waitingOn: target.waitingOn,
        since: same ? subject.stuck!.since : new Date().toISOString(),
      });
      // Looked at again soon after a change, then less and less often: a run stuck for days keeps
      // its history small. Recovery does not wait for a look: the activity finishing clears it.
      entry.wait = same ? Math.min(Math.max(entry.wait, recheckMs) * 2, CALM_RECHECK_CAP_MS) : recheckMs;
    } else {
      subject.setStuck(undefined);
      entry.wait = Math.min(Math.max(entry.wait, recheckMs) * 2, CALM_RECHECK_CAP_MS);
    }
    entry.nextLookAt = Date.now() + entry.wait;
  }
}

/** The verdict on one probe: why the run is stuck on the activity, or undefined when it is not. */
export function stuckReason(
  probe: PendingActivityProbe,
  target: WatchTarget,
  limits: StuckLimits,
  elapsedMs: number,
): Pick<StuckState, 'reason' | 'lastFailure'> | undefined {
  if (probe.state === 'absent' || probe.state === 'cancel-requested') return undefined;
  const failure = probe.lastFailure ? { lastFailure: probe.lastFailure } : {};
  if (probe.state === 'paused') return { reason: `stuck: ${target.waitingOn} is paused`, ...failure };
  if (probe.state === 'scheduled' && probe.attempt === 1) {
    // A free poller takes a scheduled task at once: one still waiting after the limit has none.
    return { reason: `stuck: no worker polls ${target.taskQueue}${pollerNote(probe)}${lostHost(target)}`, ...failure };
  }
  if (probe.attempt > limits.retryAttempts || (probe.attempt > 1 && elapsedMs >= limits.retryMs)) {
    return {
      reason: `stuck: ${target.waitingOn} retrying (attempt ${probe.attempt})${probe.lastFailure ? `: ${probe.lastFailure}` : ''}`,
      ...failure,
    };
  }
  if (
    probe.state === 'scheduled' &&
    probe.scheduledAgoMs !== undefined &&
    probe.scheduledAgoMs >= limits.notStartedMs
  ) {
    // A retry due for longer than a free poller takes to pick it up: as for a first attempt.
    return { reason: `stuck: no worker polls ${target.taskQueue}${pollerNote(probe)}${lostHost(target)}`, ...failure };
  }
  if (probe.state === 'scheduled' && probe.pollers === 0) {
    return { reason: `stuck: no worker polls ${target.taskQueue}${lostHost(target)}`, ...failure };
  }
  return undefined;
}

function pollerNote(probe: PendingActivityProbe): string {
  if (probe.pollers === 0 || probe.lastPollAgoMs === undefined) return '';
  // No time in the words: the reason changes (and is published) only when the verdict does.
  return ` (${probe.pollers} worker${probe.pollers === 1 ? '' : 's'} polled it before: all busy, or gone)`;
}

function lostHost(target: WatchTarget): string {
  return target.host ? ` — hands host ${target.host} lost? (runbook: replaceHandsHost)` : '';
}
