/**
 * The hands as Temporal activities (contract: `common/hands.ts`), built by `createHandsActivities`
 * from the worker's `Sandboxes` (`sandboxes.ts`) — all Docker access goes through them. Each activity is a named function in
 * its own module: `run-tool.ts`, `seed.ts`, `workspace-diff.ts`, `checkpoints/activities.ts`; the
 * lifecycle ones are here.
 */
import type { CheckpointActivities } from '../../common/checkpoints';
import type { HandsActivities, SessionRef } from '../../common/hands';
import type { HandsRoutingActivities } from '../../common/hands-route';
import { checkpointWorkspace, restoreCheckpoint } from './checkpoints/activities';
import { claimSandboxHost } from './claim-host';
import { handsContext, sessionOf, type HandsActivitiesDeps, type HandsContext } from './deps';
import { toActivityFailure } from './failures';
import { runTool } from './run-tool';
import { checkSeedSourceActivity, seedWorkspace } from './seed';
import { workspaceDiff } from './workspace-diff';

export type { HandsActivitiesDeps } from './deps';

export function createHandsActivities(
  deps: HandsActivitiesDeps,
): HandsActivities & HandsRoutingActivities & CheckpointActivities {
  const hands = handsContext(deps);
  return {
    checkSeedSource: (input) => checkSeedSourceActivity(hands, input),
    runTool: (input) => runTool(hands, input),
    seedWorkspace: (input) => seedWorkspace(hands, input),
    workspaceDiff: (input) => workspaceDiff(hands, input),
    destroySandbox: (input) => destroySandbox(hands, input),
    ensureSandbox: (input) => ensureSandbox(hands, input),
    claimSandboxHost: () => claimSandboxHost(hands.host),
    checkpointWorkspace: (input) => checkpointWorkspace(hands, input),
    restoreCheckpoint: (input) => restoreCheckpoint(hands, input),
  };
}

async function destroySandbox(
  hands: HandsContext,
  input: SessionRef & { keepVolume: boolean },
): Promise<{ container: boolean; volume: boolean }> {
  try {
    return await hands.sandboxes.lifecycle.remove(sessionOf(input), { keepVolume: input.keepVolume });
  } catch (err) {
    throw toActivityFailure(err);
  }
}

async function ensureSandbox(hands: HandsContext, input: SessionRef): Promise<{ created: boolean; replaced?: string }> {
  try {
    const sandbox = await hands.sandboxes.lifecycle.ensure(sessionOf(input), { operationId: input.operationId });
    return { created: sandbox.created, ...(sandbox.replaced ? { replaced: sandbox.replaced } : {}) };
  } catch (err) {
    throw toActivityFailure(err);
  }
}
