/**
 * What a checkpoint of the workspace records (`checkpoints.ts`): the result of a
 * `checkpointWorkspace` activity, or of a tool call asked to record one (`hands.ts`
 * `ToolOutcome.checkpoint`). A module of its own so that the hands contract can name it.
 *
 * An activity's result holds the short form (`CheckpointResult`): a turn that changed nothing shares
 * the previous checkpoint, and most turns of a long operation do, so its result is the commit alone.
 * Readers of the history expand it (`checkpointOutcome`); results recorded before carry every field.
 *
 * Deterministic (imported by workflow code): types and pure functions.
 */

/** A checkpoint recorded. */
export interface RecordedCheckpoint {
  /** The commit in the session's checkpoint repository (40 hex digits). */
  commit: string;
  /**
   * The previous checkpoint of the session (any operation's), whose workspace `filesChanged`
   * compares with; equal to `commit` when nothing changed since it (the turn shares its checkpoint).
   */
  parent?: string;
  /** Files added, changed or removed since `parent` (all files for the session's first checkpoint). */
  filesChanged: number;
  /** The first of them (at most `CHANGED_FILES_LISTED`), for `agent checkpoints`. */
  changed: string[];
  /** Files the agent's user could not read (left out: the checkpoint lacks them). */
  unreadable?: number;
  /** When it was recorded (the hands host's clock; for a short result, its activity's completion). */
  at: string;
  /** How long it took, in milliseconds. */
  ms: number;
}

/** A checkpoint the sandbox could not record (its image has no git): why. */
export interface SkippedCheckpoint {
  skipped: string;
  at: string;
}

export type CheckpointOutcome = RecordedCheckpoint | SkippedCheckpoint;

/**
 * A recorded checkpoint as an activity's result holds it: `parent` only when it differs from
 * `commit`, `filesChanged`, `changed` and `ms` only when not zero or empty, and no `at` (the
 * activity's completion event has the time).
 */
export type ShortCheckpoint = Pick<RecordedCheckpoint, 'commit'> & Partial<Omit<RecordedCheckpoint, 'commit'>>;

export type CheckpointResult = ShortCheckpoint | SkippedCheckpoint;

/** The short form of `outcome`, for an activity's result. */
export function checkpointResult(outcome: CheckpointOutcome): CheckpointResult {
  if ('skipped' in outcome) return outcome;
  const { commit, parent, filesChanged, changed, unreadable, ms } = outcome;
  return {
    commit,
    ...(parent !== undefined && parent !== commit ? { parent } : {}),
    ...(filesChanged ? { filesChanged } : {}),
    ...(changed.length ? { changed } : {}),
    ...(unreadable ? { unreadable } : {}),
    ...(ms ? { ms } : {}),
  };
}

/** A recorded result in full; `completedAt` (ISO time of its activity's completion) stands for a missing `at`. */
export function checkpointOutcome(result: ShortCheckpoint, completedAt: string): RecordedCheckpoint;
export function checkpointOutcome(result: CheckpointResult, completedAt: string): CheckpointOutcome;
export function checkpointOutcome(result: CheckpointResult, completedAt: string): CheckpointOutcome {
  if ('skipped' in result) return result;
  return {
    ...result,
    filesChanged: result.filesChanged ?? 0,
    changed: result.changed ?? [],
    at: result.at ?? completedAt,
    ms: result.ms ?? 0,
  };
}
