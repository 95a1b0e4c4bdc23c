/**
 * The repo contract: host-side git and the harness's own work in a coding task's workspace. These
 * activities run on the hands task queue — the host that owns the sandbox's workspace volume — and
 * are implemented in `activities/repo/`.
 *
 * Credentials stay on the host: git runs there with the host's credential helpers, ssh keys or
 * `AGENT_GIT_TOKEN`; commits leave the sandbox as git bundles read through the Docker API; nothing
 * in these inputs or results carries a credential (URLs are shown without userinfo).
 *
 * Replay: every activity here converges when retried. `commitAccepted` recognises its own commit,
 * `pushBranch` recognises a branch that already holds the commit, and `checkWorkspace` rewrites
 * the feature list from the record it is given.
 *
 * Deterministic: types and constants only (imported by workflow code).
 */
import type { Feature, FeatureListViolation } from './feature-list';
import type { TaskRepo } from './coding-task';
import type { HooksInput } from './hooks';

export interface PrepareRepositoryInput {
  taskId: string;
  sessionId: string;
  repo: TaskRepo;
  branch: string;
  /** The specification file to read from the branch (or its base), if the task names one. */
  specPath?: string;
}

export interface PrepareRepositoryResult {
  /** The remote without credentials, for reports. */
  remote: string;
  branch: string;
  /** True when the branch already existed on the remote (a later run of the same task). */
  branchExisted: boolean;
  /** The commit the run starts from. */
  startCommit: string;
  /** `feature_list.json` on the branch at `startCommit`, when it has one. */
  featureListText?: string;
  /** The specification's text, when `specPath` was given. */
  spec?: { text: string; truncated: boolean };
  /** The host's clone (bare), the record of the branch's accepted commits. */
  hostRepository: string;
  /** The repository's `.agent/hooks.json` at `startCommit`, when it has one and the hands worker allows repository hooks. */
  repositoryHooks?: HooksInput;
}

export interface SeedBranchInput {
  sessionId: string;
  operationId?: string;
  branch: string;
  commit: string;
}

/** What a fresh operation's context is built from (each part cut to a few KiB). */
export interface WorkspaceSnapshot {
  handoff?: string;
  initScript?: string;
  gitLog: string;
  gitStatus: string;
  diffStat: string;
}

export interface SnapshotInput {
  sessionId: string;
  /** Commits of `git log` to show. */
  logCount: number;
}

export interface CheckWorkspaceInput {
  sessionId: string;
  branch: string;
  /** The last commit the harness accepted: the branch must still contain it. */
  acceptedCommit: string;
  /** The harness's record of the feature list (`passes` as the harness set them); `null`: the branch has none. */
  features: Feature[] | null;
}

export interface CheckWorkspaceResult {
  violations: FeatureListViolation[];
  /** Set when HEAD no longer contained the accepted commit; the workspace was reset to it. */
  historyRewritten?: string;
}

export interface VerificationCheck {
  /** `feature` (the feature's own command) or `regression` (the task's command). */
  name: 'feature' | 'regression';
  command: string;
}

export interface VerifyInput {
  sessionId: string;
  /** Names the run directory of the checks (`.agent/verify/<key>/…`). */
  key: string;
  checks: VerificationCheck[];
  timeoutMs: number;
}

export interface CheckOutcome extends VerificationCheck {
  exitCode: number;
  timedOut: boolean;
  /** The end of the output (a few KiB). */
  outputTail: string;
}

export interface VerifyResult {
  passed: boolean;
  checks: CheckOutcome[];
}

export interface CommitAcceptedInput {
  sessionId: string;
  branch: string;
  /** The last accepted commit: the new commit's parent. */
  parent: string;
  /**
   * The harness's record with this operation's `passes` applied: written before the commit. `null`:
   * the branch has no feature list (a review round on a branch no task made) and none is written.
   */
  features: Feature[] | null;
  /** Make no commit when nothing changed since `parent` (the result's `unchanged`). */
  skipIfUnchanged?: boolean;
  subject: string;
  /** `Agent-Task`, `Agent-Feature` … trailers; also how a retried call recognises its commit. */
  trailers: Record<string, string>;
}

export interface CommitAcceptedResult {
  commit: string;
  /** Nothing changed since the parent and `skipIfUnchanged` was set: no commit was made (`commit` is the parent). */
  unchanged?: boolean;
  /** `git diff --name-status parent commit`, one `<status>\t<path>` per line, cut to 200 entries. */
  changes: Array<{ status: string; path: string }>;
  /** Existing test or verification files modified or deleted by the commit. */
  changedTestFiles: string[];
}

export interface PushBranchInput {
  sessionId: string;
  repo: TaskRepo;
  branch: string;
  /** The commit the remote branch is expected at (the last pushed commit; null before the branch exists). */
  expected: string | null;
  /** The accepted commit before `commit` (the host's clone has it): the bundle carries only what follows. */
  base: string;
  commit: string;
}

export type PushBranchResult =
  | { pushed: true; alreadyThere: boolean }
  /** The remote branch moved elsewhere: nothing was forced, the commits stay on the host and in the workspace. */
  | { pushed: false; remoteCommit: string | null; message: string };

export interface ShelveAttemptInput {
  sessionId: string;
  branch: string;
  acceptedCommit: string;
  /** A ref under `refs/agent/` that keeps the attempt's work. */
  ref: string;
  message: string;
}

export interface WriteReportInput {
  sessionId: string;
  taskId: string;
  markdown: string;
}

export interface RepoActivities {
  /** Clones (or updates) the host's copy, resolves the branch and its start commit, reads the feature list and spec. */
  prepareRepository(input: PrepareRepositoryInput): Promise<PrepareRepositoryResult>;
  /** Puts the branch at `commit` into the session's workspace as a git repository (once). */
  seedBranch(input: SeedBranchInput): Promise<{ head: string }>;
  /** HANDOFF.md, init.sh, `git log`, `git status`, `git diff --stat` of the workspace. */
  workspaceSnapshot(input: SnapshotInput): Promise<WorkspaceSnapshot>;
  /** The integrity guard: restores the feature list and the accepted history when the agent changed them. */
  checkWorkspace(input: CheckWorkspaceInput): Promise<CheckWorkspaceResult>;
  /** Runs verification commands in the sandbox. */
  verifyWorkspace(input: VerifyInput): Promise<VerifyResult>;
  /** Writes the feature list and commits the whole work tree as one commit on top of `parent`. */
  commitAccepted(input: CommitAcceptedInput): Promise<CommitAcceptedResult>;
  /** Copies the new commits out of the sandbox and pushes the branch from the host, never forcing. */
  pushBranch(input: PushBranchInput): Promise<PushBranchResult>;
  /** Keeps a given-up attempt's work under a ref and resets the workspace to the accepted commit. */
  shelveAttempt(input: ShelveAttemptInput): Promise<{ shelved?: string }>;
  /** Writes the morning report to `.agent/reports/<task id>.md` in the workspace. */
  writeReport(input: WriteReportInput): Promise<{ path: string }>;
  /** `feature_list.json` in the workspace as the initializer left it (undefined when missing). */
  readFeatureList(input: { sessionId: string }): Promise<{ text?: string }>;
  /** A review round's replies, `.agent/pr-replies.json` in the workspace (undefined when missing). */
  readRevisionReplies(input: { sessionId: string }): Promise<{ text?: string }>;
  /** Removes the host's clone of a task run whose accepted commits are all on the remote. */
  releaseHostRepository(input: { sessionId: string }): Promise<void>;
}

/** The `type` of every ApplicationFailure the repo activities throw. */
export const REPO_FAILURE_TYPES = {
  /** The repository does not exist or is not a git repository. Not retryable. */
  notFound: 'RepositoryNotFound',
  /** The host has no credentials the remote accepts. Not retryable. */
  auth: 'RepositoryAuthFailed',
  /** The ref (or branch) to start from does not exist. Not retryable. */
  refNotFound: 'RepositoryRefNotFound',
  /** The spec file does not exist on the branch. Not retryable. */
  specNotFound: 'SpecNotFound',
  /** The workspace is not in a state the harness can work with. Not retryable. */
  workspace: 'WorkspaceBroken',
  /** A push to the default branch or a protected one of a forge repository. Not retryable. */
  unsafeBranch: 'UnsafeBranch',
  /** Any other git failure (network, a busy remote). Retryable. */
  git: 'GitFailed',
} as const;

export type RepoFailureType = (typeof REPO_FAILURE_TYPES)[keyof typeof REPO_FAILURE_TYPES];

export const REPO_NON_RETRYABLE_FAILURE_TYPES: readonly RepoFailureType[] = [
  REPO_FAILURE_TYPES.notFound,
  REPO_FAILURE_TYPES.auth,
  REPO_FAILURE_TYPES.refNotFound,
  REPO_FAILURE_TYPES.specNotFound,
  REPO_FAILURE_TYPES.workspace,
  REPO_FAILURE_TYPES.unsafeBranch,
];
