/**
 * Checkpoints: after a turn whose tool batch could change files, the harness records the whole
 * workspace — whatever changed it, an edit tool or a shell command — as a git commit in a repository
 * on the session's journal volume (`/var/lib/agent-journal/checkpoints.git`), which the agent can read
 * but never write. git stores a file's content once, so a checkpoint costs only what changed. Before
 * an operation's first such batch it records the workspace as it found it (a `base` checkpoint), so
 * every turn of the operation has a checkpoint at or before it.
 *
 * The commit's tree holds two trees: `workspace` (every file, without the folders `exclude` names)
 * and `git` (the workspace repository's own `.git` directory, which a work tree never includes).
 * Each checkpoint is an activity whose result — commit, time, files changed — is in the operation's
 * history: `agent checkpoints <operation>` lists them and `agent rewind` restores one
 * (`common/rewind.ts`).
 *
 * Deterministic (imported by workflow code): zod and types only.
 */
import { z } from 'zod';
import type { CheckpointOutcome, CheckpointResult, SkippedCheckpoint } from './checkpoint-record';
import type { HandsHost } from './hands-route';

/** Folders a checkpoint leaves out unless the operation says otherwise (`checkpoints.exclude`). */
export const DEFAULT_CHECKPOINT_EXCLUDE = ['node_modules/', '.venv/'] as const;

/** Whether `exclude` is the default's patterns, in its order. */
export function isDefaultExclude(exclude: readonly string[]): boolean {
  return (
    exclude.length === DEFAULT_CHECKPOINT_EXCLUDE.length &&
    exclude.every((pattern, i) => pattern === DEFAULT_CHECKPOINT_EXCLUDE[i])
  );
}

// eslint-disable-next-line no-control-regex -- the point is to find control characters
const CONTROL = /[\u0000-\u001f\u007f]/;

/** One pattern in gitignore syntax (`node_modules/`, `*.log`, `/build/`). */
const excludePattern = z
  .string()
  .min(1, 'must be a non-empty pattern')
  .max(200, 'must be at most 200 characters')
  .refine((pattern) => !CONTROL.test(pattern), 'must not contain control characters (one pattern per entry)')
  .refine((pattern) => pattern.trim() === pattern, 'must not start or end with spaces')
  .refine((pattern) => !pattern.startsWith('#'), 'must not start with "#" (a comment in gitignore syntax)');

/** The operation input's `checkpoints` field. */
export const checkpointSettingsSchema = z.strictObject({
  /** Record checkpoints (default true). Without them the operation cannot be rewound. */
  enabled: z.boolean().default(true),
  /**
   * gitignore patterns left out of every checkpoint, replacing the default `["node_modules/",
   * ".venv/"]` (`[]` keeps everything). The folders are not restored by a rewind either.
   */
  exclude: z
    .array(excludePattern)
    .max(100)
    .default([...DEFAULT_CHECKPOINT_EXCLUDE]),
});
export type CheckpointSettings = z.output<typeof checkpointSettingsSchema>;

/**
 * A tool call's `checkpoint` (`common/hands.ts` `ToolCallCheckpoint`), checked again by the hands;
 * an absent `exclude` is the default's.
 */
export const toolCallCheckpointSchema = z.strictObject({
  turn: z.number().int().min(0),
  exclude: z
    .array(excludePattern)
    .max(100)
    .default([...DEFAULT_CHECKPOINT_EXCLUDE]),
});
export type CheckpointSettingsInput = z.input<typeof checkpointSettingsSchema>;

/**
 * `turn`: the workspace after the turn's tool batch; `base`: the workspace before the operation's
 * first batch that could change it (recorded as the turn before that batch).
 */
export type CheckpointKind = 'turn' | 'base';

export interface CheckpointWorkspaceInput {
  sessionId: string;
  operationId: string;
  /** The turn whose workspace this is (0: as the operation found it). */
  turn: number;
  kind: CheckpointKind;
  /** gitignore patterns left out (`CheckpointSettings.exclude`). */
  exclude: string[];
}

export type {
  CheckpointOutcome,
  CheckpointResult,
  RecordedCheckpoint,
  ShortCheckpoint,
  SkippedCheckpoint,
} from './checkpoint-record';
export { checkpointOutcome, checkpointResult } from './checkpoint-record';

export const CHANGED_FILES_LISTED = 10;

export interface RestoreCheckpointInput {
  /** The session whose journal volume holds the checkpoint repository. */
  fromSessionId: string;
  /** The checkpoint's commit. */
  commit: string;
  /** The new session: its workspace volume is made from the checkpoint (it must not exist yet). */
  sessionId: string;
  /** The operation that asks (labels). */
  operationId?: string;
}

export interface RestoredWorkspace {
  sessionId: string;
  commit: string;
  /** Files written into the workspace (its `.git` directory included). */
  files: number;
  /** The workspace volume made. */
  workspaceVolume: string;
  /** The hands host holding it (the one that holds the checkpoint): the new session's sandbox lives there. */
  handsHost: HandsHost;
}

export interface CheckpointActivities {
  /** Records the workspace as a checkpoint; a sandbox without git answers `skipped`. */
  checkpointWorkspace(input: CheckpointWorkspaceInput): Promise<CheckpointResult>;
  /**
   * Makes a new session's workspace (and journal) volume from a checkpoint of another session on
   * this host, with that workspace's environment. Idempotent: a retry after a crash starts over on
   * the new volume and ends with the same files; a restore already done returns its result.
   */
  restoreCheckpoint(input: RestoreCheckpointInput): Promise<RestoredWorkspace>;
}

export const CHECKPOINT_ACTIVITY = 'checkpointWorkspace';
export const RESTORE_CHECKPOINT_ACTIVITY = 'restoreCheckpoint';

/** The `type` of the ApplicationFailures the checkpoint activities throw beyond the hands' own. */
export const CHECKPOINT_FAILURE_TYPES = {
  /** The commit is not in the session's checkpoint repository. Not retryable. */
  unknownCheckpoint: 'UnknownCheckpoint',
  /** The new session's workspace exists already (and was not made by this restore). Not retryable. */
  workspaceExists: 'WorkspaceExists',
} as const;

export function isSkipped(outcome: CheckpointOutcome | CheckpointResult): outcome is SkippedCheckpoint {
  return 'skipped' in outcome;
}
