/**
 * The hands contract: the activities that run on the hands task queue of the Docker host that owns a
 * session's sandbox, what they take and what they return, and the failure types they throw.
 * Implemented in `activities/hands/`; called by the workflows, the CLI and the tests.
 *
 * Every activity names its sandbox by `sessionId`: one session has one sandbox — a container
 * `agent-sbx-<sessionId>` on a workspace volume `agent-ws-<sessionId>` (see `sandbox-names.ts`).
 *
 * Error contract: a tool that fails (non-zero exit, file not found, an edit that does not match)
 * is a result with `isError`, never an exception. Only infrastructure failures throw, as
 * ApplicationFailures whose `type` is one of `HANDS_FAILURE_TYPES`.
 *
 * Deterministic: types and constants only (imported by workflow code).
 */

import type { CheckpointResult } from './checkpoint-record';
import type { EgressPolicy, EgressSummary } from './egress';
import type { HooksInput } from './hooks';

/** A repository to copy into the workspace before the first tool call. */
export type SeedSource = { kind: 'local'; path: string } | { kind: 'git'; url: string; ref?: string };

/**
 * A tool call, as every step's history holds it. What the history holds elsewhere, or what is the
 * same in all of an operation's calls, may be left out: `toolCallId` (the activity id has it),
 * `sessionId` and `operationId` when the operation is a session of its own, `timeoutMs` and
 * `checkpoint.exclude` when they are the defaults.
 */
export interface RunToolInput {
  /** Absent: the workflow id of the activity's caller (an operation in a session of its own). */
  sessionId?: string;
  /**
   * The operation the call belongs to; absent, the session id (an operation in a session of its own,
   * whose workflow id is its session id).
   */
  operationId?: string;
  /**
   * The model's `tool_use` id: the key of the activity id, the journal, the run directory and the
   * output file. Absent: read from the activity id (`toolActivityId`).
   */
  toolCallId?: string;
  name: string;
  /** Already validated by the workflow; validated again by the hands. */
  input: unknown;
  /**
   * The call's time budget; `bash` uses min(timeout_ms, this), other tools at most 60 s. Absent: the
   * operations' default, `DEFAULT_TOOL_TIMEOUT_MS`.
   */
  timeoutMs?: number;
  /** What the sandbox may reach during the call (`common/egress.ts`); `none` when absent. */
  egress?: EgressPolicy;
  /**
   * Record the turn's checkpoint of the workspace once the call has run, in the same activity
   * (`common/checkpoints.ts`): the operation asks it of the last call of a batch that can change
   * files, instead of a `checkpointWorkspace` activity of its own.
   */
  checkpoint?: ToolCallCheckpoint;
}

/** A tool call's time budget when its operation does not set `toolTimeoutMs` (`RunToolInput.timeoutMs`). */
export const DEFAULT_TOOL_TIMEOUT_MS = 600_000;

/** The activity id of a tool call: `tool-<toolCallId>`. */
export function toolActivityId(toolCallId: string): string {
  return `tool-${toolCallId}`;
}

/** The tool call id in a tool call's activity id (`toolActivityId`); `undefined` for another activity's. */
export function toolCallIdOf(activityId: string): string | undefined {
  return activityId.startsWith('tool-') ? activityId.slice('tool-'.length) : undefined;
}

/** The checkpoint a tool call records after it runs (`RunToolInput.checkpoint`). */
export interface ToolCallCheckpoint {
  /** The turn whose workspace it is. */
  turn: number;
  /** gitignore patterns left out (`CheckpointSettings.exclude`); absent: `DEFAULT_CHECKPOINT_EXCLUDE`. */
  exclude?: string[];
}

/** Where a tool call's full output went when it was too long to return whole. */
export interface Spill {
  path: string;
  bytes: number;
  lines: number;
}

/**
 * A hands tool call's result, as its history holds it. `isError` and `synthetic` are written only
 * when true (results recorded before carry `false`); a checkpoint is in its short form
 * (`CheckpointResult`).
 */
export interface ToolOutcome {
  /** The tool_result content for the model. */
  content: string;
  isError?: boolean;
  /** True when the hands made the result up (an interrupted `never` call) instead of running the tool. */
  synthetic?: boolean;
  exitCode?: number;
  /** Why the sandbox container was replaced before this call (also stated in `content`). */
  sandboxReplaced?: string;
  spill?: Spill;
  /** The requests the call made through the egress proxy (absent when it made none). */
  egress?: EgressSummary;
  /**
   * Set when the call ran with `docker exec` because the sandbox's executor (the persistent process
   * that runs tool commands) could not start: why. Not in `content`: it changes nothing for the model.
   */
  executorFallback?: string;
  /** The checkpoint the call was asked to record: recorded, or skipped when the image has no git. */
  checkpoint?: CheckpointResult;
  /** Why the checkpoint the call was asked to record could not be (the call's own result stands). */
  checkpointFailure?: string;
}

export interface SeedWorkspaceInput {
  sessionId: string;
  operationId?: string;
  source: SeedSource;
}

export interface SeedResult {
  files: number;
  bytes: number;
  /** The commit checked out, when the source is a git repository with commits. */
  head?: string;
}

export interface CheckSeedSourceInput {
  source: SeedSource;
}

export interface SeedSourceCheck {
  /** What will be read: the real path of a local directory, or the git URL (without credentials). */
  resolved: string;
  /** The repository's `.agent/hooks.json`, when it has one and the hands worker allows repository hooks. */
  repositoryHooks?: HooksInput;
}

export interface SessionRef {
  sessionId: string;
  operationId?: string;
}

export interface HandsActivities {
  /**
   * Checks, on the hands host and without a container, that the seed source may be read: a local
   * path must exist, be a directory and lie inside the worker's allowed roots; a git URL must use an
   * allowed form. Throws `InvalidSeedSource` (naming the path and the allowed roots) otherwise.
   */
  checkSeedSource(input: CheckSeedSourceInput): Promise<SeedSourceCheck>;
  /** Runs one tool call in the session's sandbox, following the tool's replay policy on a retry. */
  runTool(input: RunToolInput): Promise<ToolOutcome>;
  /** Copies the repository into the workspace once per session (a later call returns the first result). */
  seedWorkspace(input: SeedWorkspaceInput): Promise<SeedResult>;
  /** `git diff` of the workspace against HEAD, new files included. */
  workspaceDiff(input: SessionRef): Promise<{ diff: string; stat: string }>;
  /** Removes the container and, unless `keepVolume`, the workspace volume; says which existed and went. */
  destroySandbox(input: SessionRef & { keepVolume: boolean }): Promise<{ container: boolean; volume: boolean }>;
  /** Creates the sandbox now (eager provisioning); a no-op when it is already running. */
  ensureSandbox(input: SessionRef): Promise<{ created: boolean; replaced?: string }>;
}

/** The `type` of every ApplicationFailure the hands throw. */
export const HANDS_FAILURE_TYPES = {
  /** The Docker engine did not answer. Retryable. */
  unavailable: 'SandboxUnavailable',
  /** The container went away while a call ran. Retryable (the retry replaces it). */
  lost: 'SandboxLost',
  /** Any other Docker or sandbox failure. Retryable. */
  failed: 'SandboxFailed',
  /** The sandbox image is not built. Not retryable. */
  imageMissing: 'SandboxImageMissing',
  /** A tool call or sandbox id the hands refuse. Not retryable. */
  invalidInput: 'InvalidToolInput',
  /** The repository to seed may not be read (missing, not a directory, outside the allowed roots, a forbidden URL). Not retryable. */
  invalidSeedSource: 'InvalidSeedSource',
  /** Cloning the repository to seed failed. Retryable. */
  cloneFailed: 'SeedCloneFailed',
  /** An unexpected error inside the hands. Retryable. */
  unexpected: 'HandsError',
} as const;

export type HandsFailureType = (typeof HANDS_FAILURE_TYPES)[keyof typeof HANDS_FAILURE_TYPES];

/** Failures that retrying cannot fix: the activities throw them non-retryable and the presets list them. */
export const HANDS_NON_RETRYABLE_FAILURE_TYPES: readonly HandsFailureType[] = [
  HANDS_FAILURE_TYPES.imageMissing,
  HANDS_FAILURE_TYPES.invalidInput,
  HANDS_FAILURE_TYPES.invalidSeedSource,
];
