/**
 * When the repository is checked (`OperationSandbox.checkSeedSource`): the first model request never
 * waits for the hands host. The first model call goes out at once; the check runs as soon as its
 * reply is in, before anything acts on that reply — so a repository that may not be read still
 * fails the operation before any tool or hook runs, with the same error (the first reply is void;
 * its tokens are billed). One after the other rather than at once, so an operation's steps keep one
 * order whatever the timing (the crash matrices compare that order across runs).
 *
 * The check comes first, as before, when something needs the sandbox before the first request: an
 * eager sandbox (it starts alongside the first model call once the check has passed) and
 * SessionStart or UserPromptSubmit hooks of the operation's own (they run in the sandbox). A
 * repository's own hooks (`.agent/hooks.json`, where the hands worker allows them) are known only
 * from the check: when they add SessionStart or UserPromptSubmit context, the first reply was asked
 * without it, so it is void (billed), the hooks run, and the turn is asked again.
 *
 * Only in operations that took the `seed-check-after-first-model-reply` patch; earlier ones
 * checked before the first model call.
 */
import { hooksOn } from './hooks';
import type { OperationSandbox } from './sandbox';
import type { OperationEnd, OperationRun } from './state';

export const SEED_CHECK_AFTER_FIRST_REPLY_PATCH = 'seed-check-after-first-model-reply';

/** Whether the operation has hooks that add to its first message (its own, or the repository's once known). */
export const startHooksOn = (op: OperationRun): boolean =>
  hooksOn(op, 'SessionStart') || hooksOn(op, 'UserPromptSubmit');

/** The repository's check, run once, when the operation first asks for its verdict. */
export class SeedCheck {
  private verdict: Promise<OperationEnd | undefined> | undefined;

  constructor(private readonly sandbox: OperationSandbox) {}

  /** Whether the check has run (or is running). */
  get started(): boolean {
    return this.verdict !== undefined;
  }

  /** How the operation ends when the repository may not be read; an eager sandbox starts once it may. */
  run(): Promise<OperationEnd | undefined> {
    this.verdict ??= this.sandbox.checkSeedSource().then((refused) => {
      if (!refused) this.sandbox.startEagerly();
      return refused;
    });
    return this.verdict;
  }
}

/** Whether the check must come before the first model request (see the file comment). */
export const checkBeforeFirstRequest = (op: OperationRun): boolean => op.settings.eagerSandbox || startHooksOn(op);
