/**
 * `session` (id `session-<sessionId>`): the single writer of a session's state — its lanes, the index
 * of its operations, its global facts and its sandbox. Operations are its child workflows.
 *
 * Everything arrives as messages, handled by the modules beside this one: prompts (`lanes.ts`:
 * the `prompt` Update, lanes, follow-ups, continuing a lane's conversation), facts
 * (`facts.ts`), notices from its operations (`operations.ts`: forked subagent
 * lanes, aborts) and the sandbox lease (`sandbox.ts`). The workflow function itself only
 * removes the container when the session has been idle long enough, and continues as new when
 * Temporal suggests it and the session is idle (no operation open, so nothing but the lanes, the
 * index and the facts needs carrying). It never ends on its own.
 */
import { allHandlersFinished, condition, continueAsNew, workflowInfo } from '@temporalio/workflow';
import { acceptFacts } from './facts';
import { startFork } from './fork';
import { acceptPrompts } from './lanes';
import { listenToOperations } from './operations';
import { leaseSandbox, removeIdleSandbox, sandboxRemovalDue } from './sandbox';
import { isIdle, startSessionRun, type SessionCarry, type SessionRun } from './state';
import { answerSessionQuery, publishSessionAttributes, showSessionDetails } from './visibility';

export type { SessionCarry } from './state';

export async function session(rawInput: unknown, carry?: SessionCarry): Promise<void> {
  const s = startSessionRun(rawInput, carry);
  answerSessionQuery(s);
  acceptPrompts(s);
  acceptFacts(s);
  listenToOperations(s);
  leaseSandbox(s);
  publishSessionAttributes(s);
  showSessionDetails(s);
  // A session made by a rewind sets its lane up (and starts its first prompt) on its first run.
  if (!carry && s.settings.fork) await startFork(s);

  for (;;) {
    await condition(() => sandboxRemovalDue(s) || continueAsNewDue(s));
    if (continueAsNewDue(s)) {
      await condition(allHandlersFinished);
      if (continueAsNewDue(s)) await continueAsNew<typeof session>(withSessionId(rawInput, s), s.carry);
      continue;
    }
    await removeIdleSandbox(s);
    showSessionDetails(s);
  }
}

function continueAsNewDue(s: SessionRun): boolean {
  return workflowInfo().continueAsNewSuggested && isIdle(s) && s.sandbox !== 'removing' && !sandboxRemovalDue(s);
}

/** The input for the next run, with the session id spelled out (the derived one stays the same). */
function withSessionId(rawInput: unknown, s: SessionRun): unknown {
  const input = typeof rawInput === 'object' && rawInput !== null ? rawInput : {};
  return { ...input, sessionId: s.sessionId };
}
