/**
 * What a checkpoint of the workspace records (`checkpoints.ts`): the result of a
 * `checkpointWorkspace` activity, or of a tool call asked to record one (`hands.ts`
 * `ToolOutcome.checkpoint`). A module of its own so that the hands contract can name it.
 *
 * Deterministic (imported by workflow code): types only.
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
  /** When it was recorded (the hands host's clock). */
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
