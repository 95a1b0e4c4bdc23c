/**
 * The coding-task contract: an overnight run on a repository branch. A task clones the repository
 * on the hands host, runs an initializer operation on a branch that has no feature list yet, then
 * one coding operation per feature (each a fresh context), verifies every feature itself, commits
 * one commit per accepted feature and pushes the branch from the host. Startable with
 * `temporal workflow start --type codingTask`, `agent task start` and Temporal Schedules.
 *
 * Deterministic (imported by workflow code): zod, Temporal definitions and types only.
 */
import { defineQuery } from '@temporalio/workflow';
import { z } from 'zod';
import { APPROVAL_TIMEOUT_DEFAULT_MS, APPROVAL_TIMEOUT_MAX_MS, type WaitingApproval } from './approvals';
import { onExceededSchema } from './budget';
import { egressPolicySchema } from './egress';
import { environmentInputSchema, type PreparedEnvironment } from './environment';
import { forgeNameSchema, repositoryNameSchema } from './forge';
import { hooksSchema } from './hooks';
import type { FeatureListViolation } from './feature-list';
import { mcpServersSchema } from './mcp';
import type { TokenUsage } from './model-types';
import { stuckLimitsSchema, type StuckState } from './stuck';
import { describeZodError } from './validation';

/** The workflow type name, for `temporal workflow start --type codingTask`. */
export const CODING_TASK_WORKFLOW_TYPE = 'codingTask';

/** Git's ref-name rules (`git check-ref-format`), the part that matters for branch names. */
export function isBranchName(name: string): boolean {
  if (!/^[A-Za-z0-9._/@+-]{1,200}$/.test(name)) return false;
  if (name.startsWith('-') || name.startsWith('/') || name.endsWith('/') || name.endsWith('.')) return false;
  if (name.includes('..') || name.includes('//') || name.includes('@{') || name === '@') return false;
  return name.split('/').every((part) => !part.startsWith('.') && !part.endsWith('.lock'));
}

/** True when a URL carries credentials (`https://user:token@host/…`, `https://token@host/…`). */
export function urlHasCredentials(url: string): boolean {
  const match = /^([a-z][a-z0-9+.-]*):\/\/([^/@\s]*)@/i.exec(url);
  if (!match) return false;
  const scheme = match[1]!.toLowerCase();
  return scheme === 'ssh' || scheme === 'git+ssh' ? match[2]!.includes(':') : true;
}

const relativeRepoPath = z
  .string()
  .min(1, 'must be a non-empty path')
  .refine(
    (p) => !p.startsWith('/') && !p.split('/').some((part) => part === '..'),
    'must be a path inside the repository (relative, no "..")',
  );

export const taskRepoSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('local'),
    path: z
      .string()
      .min(1, 'must be a non-empty path')
      .refine((p) => p.startsWith('/'), 'must be an absolute path'),
  }),
  z.strictObject({
    kind: z.literal('git'),
    url: z
      .string()
      .min(1, 'must be a non-empty URL')
      .refine(
        (url) => !urlHasCredentials(url),
        'must not carry credentials: give the hands worker a credential helper or AGENT_GIT_TOKEN instead',
      ),
    ref: z.string().min(1).max(200).optional(),
  }),
  z.strictObject({
    /** A repository on a forge of the worker's `AGENT_FORGES`: cloned and pushed with the forge's token. */
    kind: z.literal('forge'),
    forge: forgeNameSchema,
    repository: repositoryNameSchema,
  }),
]);

export type TaskRepo = z.output<typeof taskRepoSchema>;

/** The repository as a person reads it: a path, a URL, or `<forge>:<owner>/<name>`. */
export function taskRepoLabel(repo: TaskRepo): string {
  if (repo.kind === 'local') return repo.path;
  if (repo.kind === 'git') return repo.url;
  return `${repo.forge}:${repo.repository}`;
}

/** The key of the repository's dependency cache (`local:<path>`, `git:<url>`, `forge:<forge>/<owner>/<name>`). */
export function taskRepoCacheKey(repo: TaskRepo): string {
  if (repo.kind === 'local') return `local:${repo.path}`;
  if (repo.kind === 'git') return `git:${repo.url}`;
  return `forge:${repo.forge}/${repo.repository}`;
}

export const codingTaskBudgetSchema = z.strictObject({
  /** Features this run works on (each until it passes or is skipped); the next run goes on. */
  featuresPerRun: z.int().positive().max(10_000).optional(),
  /** Model turns of each operation (the initializer's and every feature attempt's). */
  maxTurnsPerFeature: z.int().positive().max(10_000).default(50),
  /** Failed attempts after which a feature is skipped for this run. */
  maxAttemptsPerFeature: z.int().positive().max(100).default(3),
  /** Tokens of the whole run (all operations); passed down as each operation's remaining budget. */
  maxTotalTokens: z.int().positive().optional(),
  /** Estimated cost of the whole run in US dollars; passed down as each operation's remaining budget. */
  maxCostUsd: z.number().positive().optional(),
  /** Wall-clock limit of the run; passed down as each operation's remaining deadline. */
  maxDurationMs: z.int().positive().optional(),
  /**
   * What a spent token, cost or deadline budget does, checked between operations: `end` the run
   * (the default), or `ask` — wait for an approval that extends it by a quarter (`common/budget.ts`).
   */
  onExceeded: onExceededSchema,
});

/**
 * A pull request the task opens (or updates in place) for its branch at the end of every run, with
 * the morning report as its body; a workflow then looks after it (`common/pull-request.ts`). Only
 * for a repository on a forge (`repo.kind: "forge"`), where it is on by default.
 */
export const taskPullRequestSchema = z.strictObject({
  /** Open it as a draft (default); a later run never changes what a person made of it. */
  draft: z.boolean().default(true),
  /** The branch to merge into; default: the repository's default branch. */
  base: z.string().refine(isBranchName, 'must be a valid git branch name').optional(),
  /** Its title; default: from the issue, the specification or the branch. */
  title: z.string().trim().min(1).max(200).optional(),
  /** The issue it resolves (linked with `Fixes #n` in its body). */
  issue: z.int().positive().optional(),
  /** Start the workflow that answers its reviews and failing checks (default true). */
  loop: z.boolean().default(true),
  /** Rounds the loop may spend on failing checks (default 3). */
  maxFixRounds: z.int().min(0).max(100).default(3),
  /** How often the loop reads the pull request when no webhook wakes it (default 5 min). */
  pollIntervalMs: z.int().min(1_000).max(86_400_000).default(300_000),
});
export type TaskPullRequest = z.output<typeof taskPullRequestSchema>;

/** A comment the revision answers (a review's line comment, a review's body or a conversation comment). */
export const revisionCommentSchema = z.strictObject({
  id: z.int().positive(),
  /** `review-comment` (a line), `review` (a review's body), `comment` (the conversation). */
  kind: z.enum(['review-comment', 'review', 'comment']),
  author: z.string().min(1).max(200),
  body: z.string().max(20_000),
  path: z.string().max(1_000).optional(),
  line: z.int().min(0).optional(),
  diffHunk: z.string().max(4_000).optional(),
});
export type RevisionComment = z.output<typeof revisionCommentSchema>;

/**
 * A review round instead of a night's features: one operation (attempted up to
 * `budget.maxAttemptsPerFeature` times) on the existing branch with these instructions, verified by
 * the task's `verify`, one commit pushed to the same branch, and per comment a reply the agent wrote
 * in `.agent/pr-replies.json`.
 */
export const taskRevisionSchema = z.strictObject({
  /** `review` (comments to address), `checks` (failing checks to fix), `command` (an `/agent` request). */
  kind: z.enum(['review', 'checks', 'command']),
  /** What to do, for the goal (the comments are listed after it). */
  instructions: z.string().trim().min(1).max(100_000),
  comments: z.array(revisionCommentSchema).max(200).default([]),
  /** The pull request the round is for. */
  pullRequest: z.int().positive().optional(),
});
export type TaskRevision = z.output<typeof taskRevisionSchema>;

/** The fields of a coding task's input (the schema below adds the checks between them). */
export const codingTaskFields = {
  repo: taskRepoSchema,
  /** The branch the run works on and pushes; default `agent/<task id>`. */
  branch: z.string().refine(isBranchName, 'must be a valid git branch name').optional(),
  /** The specification the initializer expands into a feature list (or `specPath`). */
  spec: z.string().trim().min(1, 'must be a non-empty string').max(200_000).optional(),
  /** A file in the repository holding the specification. */
  specPath: relativeRepoPath.optional(),
  /** The regression check run in the sandbox after every feature (e.g. `npm test`). */
  verify: z.string().trim().min(1, 'must be a non-empty shell command').optional(),
  /** Time limit of one verification command. */
  verifyTimeoutMs: z.int().min(1_000).max(3_600_000).default(600_000),
  budget: codingTaskBudgetSchema.default({ maxTurnsPerFeature: 50, maxAttemptsPerFeature: 3 }),
  /** Model of every operation; defaults to the brain worker's. */
  model: z.string().min(1).optional(),
  /** Task queue of the hands worker that owns the Docker host (sandbox and host-side git). */
  handsTaskQueue: z.string().min(1).optional(),
  /** MCP servers every operation of the task may call (`common/mcp.ts`), run by the brain worker. */
  mcpServers: mcpServersSchema.optional(),
  /**
   * What the sandbox may reach (`common/egress.ts`); default `registries`: the package registries
   * the hands host is configured to use, so `init.sh` can install dependencies.
   */
  egress: egressPolicySchema.default('registries'),
  /**
   * What the sandbox runs in (`common/environment.ts`); without it, the repository's
   * devcontainer.json, else detection from its files (`pyproject.toml`, `go.mod`, …).
   */
  environment: environmentInputSchema.optional(),
  /** How long a spent budget (`budget.onExceeded: "ask"`) waits for `agent approve` before the run ends. */
  approvalTimeoutMs: z.int().min(1_000).max(APPROVAL_TIMEOUT_MAX_MS).default(APPROVAL_TIMEOUT_DEFAULT_MS),
  /** When the task calls itself stuck on an activity it waits for (`common/stuck.ts`); every operation gets them too. */
  stuck: stuckLimitsSchema.prefault({}),
  /**
   * Hooks every operation of the task runs (`common/hooks.ts`), before the repository's own where
   * the hands worker allows those. A `Stop` hook running the verification keeps the agent at a
   * feature until it passes (docs/hooks.md).
   */
  hooks: hooksSchema.optional(),
  /** The pull request of the branch (`repo.kind: "forge"` only; opened by default there). */
  pullRequest: taskPullRequestSchema.optional(),
  /** A review round on the existing branch instead of a night's features. */
  revision: taskRevisionSchema.optional(),
};

export const codingTaskInputSchema = z
  .strictObject(codingTaskFields)
  .refine((input) => !(input.spec !== undefined && input.specPath !== undefined), {
    message: 'give one of spec or specPath, not both',
    path: ['specPath'],
  })
  .refine((input) => input.pullRequest === undefined || input.repo.kind === 'forge', {
    message: 'a pull request needs a repository on a forge (repo.kind "forge")',
    path: ['pullRequest'],
  })
  .refine((input) => input.revision === undefined || input.branch !== undefined, {
    message: 'a revision works on an existing branch: give branch',
    path: ['revision'],
  });

export type CodingTaskInput = z.input<typeof codingTaskInputSchema>;
export type CodingTaskSettings = z.output<typeof codingTaskInputSchema>;

export function parseCodingTaskInput(
  raw: unknown,
): { ok: true; value: CodingTaskSettings } | { ok: false; error: string } {
  const result = codingTaskInputSchema.safeParse(raw);
  return result.success ? { ok: true, value: result.data } : { ok: false, error: describeZodError(result.error) };
}

/** The default branch of a task: `agent/<task id>`, made a valid branch name. */
export function defaultTaskBranch(taskId: string): string {
  const cleaned = taskId
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[-.]+/, '')
    .replace(/\.+$/, '')
    .slice(0, 100);
  return `agent/${cleaned || 'task'}`;
}

/** The failure `type`s a coding task ends with (a failed task carries its result in the failure's details). */
export const CODING_TASK_FAILURES = {
  invalidInput: 'InvalidCodingTaskInput',
  failed: 'CodingTaskFailed',
} as const;

export type TaskState = 'running' | 'completed' | 'failed' | 'aborted';

/** How one feature stands at the end of the run. */
export interface FeatureOutcome {
  id: string;
  description: string;
  passes: boolean;
  passedThisRun: boolean;
  /** Attempts this run (operations started for it). */
  attempts: number;
  /** Skipped this run after too many failed attempts. */
  skipped: boolean;
  lastError?: string;
  /** The commit that made it pass, when it passed this run. */
  commit?: string;
}

export interface TaskCommit {
  sha: string;
  subject: string;
  /** The feature it implements; absent for the initializer's commit. */
  featureId?: string;
}

/** An integrity problem the harness found after an operation, and what it did. */
export interface IntegrityNote {
  operationId: string;
  featureId?: string;
  attempt?: number;
  violation: FeatureListViolation | { kind: 'history-rewritten'; detail: string };
  /** What the harness did about it. */
  action: string;
}

/** One operation the task ran, as the task's ledger records it. */
export interface LedgerEntry {
  operationId: string;
  kind: 'initializer' | 'feature' | 'revision';
  featureId?: string;
  attempt?: number;
  state: 'completed' | 'failed' | 'aborted';
  reason: string;
  turns: number;
  usage: TokenUsage;
  costUsd: number;
  /** For features: whether the harness's verification passed. */
  verified?: boolean;
  /** What the verification printed last, when it failed. */
  verifyError?: string;
  /** The commit the harness made when it accepted the operation's work. */
  commit?: string;
  /** Existing test or verification files the accepted work modified or deleted. */
  changedTestFiles?: string[];
}

export interface TaskReportData {
  taskId: string;
  state: Exclude<TaskState, 'running'>;
  reason: string;
  /** The remote as the report may show it (no credentials). */
  remote: string;
  branch: string;
  /** `ran` this run, `not needed` (the branch had a feature list), `not run` (the run ended first). */
  initializer: 'ran' | 'not needed' | 'not run';
  /** The branch's commit when the run started (empty before the repository was prepared). */
  startCommit: string;
  /** The last commit the harness accepted (pushed, unless `unpushed` lists it). */
  endCommit: string;
  features: FeatureOutcome[];
  commits: TaskCommit[];
  /** Commits accepted but not on the remote (a rejected push): kept in the workspace and the host clone. */
  unpushed: TaskCommit[];
  integrity: IntegrityNote[];
  ledger: LedgerEntry[];
  usage: TokenUsage;
  costUsd: number;
  wallMs: number;
  sessionId: string;
  workspaceVolume: string;
  /** Where the host keeps its clone (the record of accepted commits). */
  hostRepository?: string;
  /** The workspace's environment: where it came from, its image and toolchains. */
  environment?: PreparedEnvironment;
  /** The branch's pull request, opened or updated at the end of the run. */
  pullRequest?: TaskPullRequestOutcome;
  /** A review round's outcome (`revision` in the input). */
  revision?: RevisionOutcome;
}

export interface TaskPullRequestOutcome {
  number?: number;
  url?: string;
  /** `created`, `updated`, `closed-before` (a person closed the branch's pull request: none opened), `not opened` (with `reason`). */
  outcome: 'created' | 'updated' | 'closed-before' | 'not opened';
  reason?: string;
  /** The workflow that looks after it. */
  loopId?: string;
}

/** What the agent said of one comment, from `.agent/pr-replies.json`. */
export interface CommentReply {
  /** The comment's reference in the round's goal: `review-comment-<id>`, `review-<id>`, `comment-<id>`. */
  ref: string;
  addressed: boolean;
  reply: string;
}

/** How a round's goal and its replies file name a comment. */
export function revisionCommentRef(comment: Pick<RevisionComment, 'kind' | 'id'>): string {
  return `${comment.kind}-${comment.id}`;
}

export interface RevisionOutcome {
  kind: TaskRevision['kind'];
  /** The commit pushed to the branch (none: nothing was accepted). */
  commit?: string;
  /** The verification passed (or the task has none). */
  verified: boolean;
  /** Why the round's work was not accepted. */
  failure?: string;
  attempts: number;
  /** A reply per comment the revision was given (the agent's, or the harness's when it wrote none). */
  replies: CommentReply[];
  /** The agent's closing summary, cut to a few KiB. */
  summary: string;
}

export interface CodingTaskResult extends TaskReportData {
  /** The morning report (markdown); also written to `.agent/reports/<task id>.md` in the workspace. */
  report: string;
  reportPath?: string;
}

export interface CodingTaskStatus {
  /** `waiting-approval` while a spent budget waits for `agent approve` (`waitingApproval`). */
  state: TaskState | 'waiting-approval';
  phase: 'preparing' | 'environment' | 'initializing' | 'feature' | 'verifying' | 'pushing' | 'finishing' | 'done';
  branch: string;
  /** The feature being worked on, its attempt, and the operation doing it. */
  current?: { featureId?: string; attempt?: number; operationId: string };
  total: number;
  passing: number;
  passedThisRun: number;
  skipped: number;
  commitsPushed: number;
  usage: TokenUsage;
  costUsd: number;
  startedAt: string;
  /** The report as it would read if the run ended now. */
  report: string;
  /** The workspace's environment in one line, once prepared. */
  environment?: string;
  /** The spent budget waiting for `agent approve <task id> budget-<n>`. */
  waitingApproval?: WaitingApproval;
  /** Set while an activity the task waits on is stuck (cleared when the cause goes away). */
  stuck?: StuckState;
}

export const taskStatusQuery = defineQuery<CodingTaskStatus>('taskStatus');
