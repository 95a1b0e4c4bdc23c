/**
 * The repository check alongside the first model call: the first model request never waits for the
 * hands host. The check (`OperationSandbox.checkSeedSource`) starts with the operation and runs while
 * the model answers; nothing acts on the first reply before the check has answered, so a repository
 * that may not be read still fails the operation before any tool or hook runs, with the same error
 * (a refusal that comes first cancels the model call; one that comes after voids the reply, whose
 * tokens are billed all the same). Eager provisioning starts once the check has passed.
 *
 * A repository's own hooks (`.agent/hooks.json`, where the hands worker allows them) are known only
 * from the check. When they add SessionStart or UserPromptSubmit context, the first reply was asked
 * without it: it is voided (billed), the hooks run, and the turn is asked again — the one case that
 * pays for not waiting. An operation with such hooks of its own waits for the check before running
 * them (they run in the sandbox the check guards).
 *
 * Only in operations that took the `seed-check-alongside-first-model-call` patch; earlier ones
 * checked before the first model call.
 */
import { CancellationScope, isCancellation } from '@temporalio/workflow';
import type { ModelStepResult } from '../../common/model-step';
import { hooksOn } from './hooks';
import type { OperationSandbox } from './sandbox';
import type { OperationEnd, OperationRun } from './state';

export const SEED_CHECK_ALONGSIDE_PATCH = 'seed-check-alongside-first-model-call';

/** The check's verdict to come: how the operation ends when the repository may not be read. */
export type PendingSeedCheck = Promise<OperationEnd | undefined>;

/** Starts the check; an eager sandbox is started once it has passed. */
export function startSeedCheck(sandbox: OperationSandbox): PendingSeedCheck {
  const check = sandbox.checkSeedSource();
  void check.then((refused) => {
    if (!refused) sandbox.startEagerly();
  });
  return check;
}

/** Whether the operation has hooks that add to its first message (its own, or the repository's once known). */
export const startHooksOn = (op: OperationRun): boolean =>
  hooksOn(op, 'SessionStart') || hooksOn(op, 'UserPromptSubmit');

/** The first model turn and the check's verdict, or the verdict alone when a refusal came first. */
export async function firstTurnAlongside(
  check: PendingSeedCheck,
  turn: () => Promise<ModelStepResult | undefined>,
): Promise<{ reply?: ModelStepResult; refused?: OperationEnd }> {
  const scope = new CancellationScope();
  let refusedFirst: OperationEnd | undefined;
  void check.then((refused) => {
    if (refused) {
      refusedFirst = refused;
      scope.cancel();
    }
  });
  try {
    const reply = await scope.run(turn);
    const refused = await check;
    return { ...(reply ? { reply } : {}), ...(refused ? { refused } : {}) };
  } catch (err) {
    if (refusedFirst && isCancellation(err)) return { refused: refusedFirst };
    throw err;
  }
}
