/**
 * What an activity's cancellation means for the command an attempt runs in the sandbox (a tool call
 * or a hook). Only a cancel request — the workflow's abort, deadline or cancelled scope — or an
 * operator's reset stops the command: it is killed and the attempt confirms the cancellation once it
 * is gone. Any other cancellation ends the attempt, not the call: the server gave the attempt up (its
 * heartbeat timed out, as on a worker starved of CPU), the worker is shutting down, or an operator
 * paused the activity. The command then runs on in the sandbox, this attempt stops waiting for it,
 * and the next attempt finds it in the journal and waits for its result (`earlier-attempt.ts`) —
 * killing it would hand the model "cancelled" for a command nobody cancelled.
 */
import type { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';

export interface AttemptCancellation {
  /** Aborts when the command is to be killed: give it to `exec` as its `signal`. */
  readonly kill: AbortSignal | undefined;
  /** The attempt is cancelled, for whichever reason. */
  readonly aborted: boolean;
  /** `work`'s outcome, or a `CancelledFailure` as soon as the attempt is given up (`work` runs on). */
  orAbandoned<T>(work: Promise<T>): Promise<T>;
}

export function attemptCancellation(ctx: Context | undefined): AttemptCancellation {
  if (!ctx) return { kill: undefined, aborted: false, orAbandoned: (work) => work };
  const kill = new AbortController();
  let abandon: (err: unknown) => void = () => undefined;
  const abandoned = new Promise<never>((_, reject) => (abandon = reject));
  abandoned.catch(() => undefined); // nobody may be waiting when it happens
  const onCancel = () => {
    const details = ctx.cancellationDetails;
    const reason: unknown = ctx.cancellationSignal.reason;
    // No details: an SDK that does not give them; the cancellation is taken as requested.
    if (!details || details.cancelRequested || details.reset) kill.abort(reason);
    else abandon(reason instanceof CancelledFailure ? reason : new CancelledFailure('attempt abandoned'));
  };
  if (ctx.cancellationSignal.aborted) onCancel();
  else ctx.cancellationSignal.addEventListener('abort', onCancel, { once: true });
  return {
    kill: kill.signal,
    get aborted() {
      return ctx.cancellationSignal.aborted;
    },
    // A later rejection of `work` is handled by the race, so it never goes unhandled.
    orAbandoned: (work) => Promise.race([work, abandoned]),
  };
}
