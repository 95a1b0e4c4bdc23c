/**
 * A session made by a rewind (`common/session-fork.ts`): on its first run, before any prompt is
 * served, its workspace is known to be on the hands host the restore used, and its lane is created
 * continuing the rewound conversation (or empty, for a restore of the files alone). When the rewind
 * gave a prompt, it is accepted as the lane's first operation, exactly as a `prompt` Update would be.
 */
import type { SessionRun } from './state';
import { laneOf } from './state';
import { acceptPrompt } from './lanes';
import { showSessionDetails } from './visibility';

export async function startFork(s: SessionRun): Promise<void> {
  const fork = s.settings.fork;
  if (!fork) return;
  s.carry.handsHost = fork.handsHost;
  const lane = laneOf(s, fork.lane);
  lane.rewoundFrom = { sessionId: fork.from.sessionId, operationId: fork.from.operationId, turn: fork.from.turn };
  if (fork.context) lane.context = fork.context;
  showSessionDetails(s);
  if (!fork.prompt) return;
  try {
    await acceptPrompt(s, { prompt: fork.prompt.prompt, lane: fork.lane, operationId: fork.prompt.operationId });
  } catch {
    // An operation that could not start is recorded in the session's index (`lanes.ts`).
  }
}
