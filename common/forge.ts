/**
 * The forge contract: pull requests, their reviews, comments and checks, and issues, on a forge
 * (Gitea, tested for real; GitHub, on the same code with its differences named in
 * `activities/forge/dialects.ts`). Implemented host-side by `activities/forge/`; every call is an
 * activity with the `FORGE_ACTIVITY_OPTIONS` preset.
 *
 * Credentials never appear here: an input names a forge (`forge`), which the worker's settings
 * (`AGENT_FORGES`) map to a URL and to the names of its secrets in the host's secret store.
 *
 * Replay: every write converges when retried or repeated after a crash. A pull request is found by
 * its head branch before one is created (one per branch); every comment the harness writes ends with
 * a hidden marker naming what it is for (`agentMarker`), and a comment whose marker is already on the
 * forge is not written again. The forge's own record is what makes this hold across workers.
 *
 * Deterministic: zod, types and pure functions (imported by workflow code).
 */
import { defineQuery } from '@temporalio/workflow';
import { z } from 'zod';

export const FORGE_KINDS = ['gitea', 'github'] as const;
export type ForgeKind = (typeof FORGE_KINDS)[number];

/** A forge's name in `AGENT_FORGES`: what inputs use instead of a URL and a token. */
export const FORGE_NAME = /^[a-z][a-z0-9-]{0,39}$/;
/** `owner/name`, as forges spell a repository. */
export const REPOSITORY_NAME = /^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/;

export const forgeNameSchema = z
  .string()
  .regex(FORGE_NAME, 'must be a forge named in AGENT_FORGES (lower-case letters, digits and "-")');
export const repositoryNameSchema = z
  .string()
  .regex(REPOSITORY_NAME, 'must be "owner/name"')
  .refine((name) => !name.split('/').some((part) => part === '.' || part === '..'), 'must be "owner/name"');

/** A repository on a named forge. */
export const forgeRepositorySchema = z.strictObject({
  forge: forgeNameSchema,
  repository: repositoryNameSchema,
});
export type ForgeRepository = z.output<typeof forgeRepositorySchema>;

/** A stable text for ids and search attributes: `local:owner/name`. */
export function forgeRepositoryKey(repo: ForgeRepository): string {
  return `${repo.forge}:${repo.repository}`;
}

/** `pr-<forge>-<owner>-<name>-<number>`: the id of the workflow that looks after one pull request. */
export function pullRequestLoopId(repo: ForgeRepository, number: number): string {
  return `pr-${idPart(repo.forge)}-${idPart(repo.repository.replace('/', '-'))}-${number}`;
}

/** `agent-issue-<forge>-<owner>-<name>-<number>`: the coding task an issue's label starts (one per issue). */
export function issueTaskId(repo: ForgeRepository, issue: number): string {
  return `agent-issue-${idPart(repo.forge)}-${idPart(repo.repository.replace('/', '-'))}-${issue}`;
}

/** The branch a task started from an issue works on. */
export function issueBranch(issue: number): string {
  return `agent/issue-${issue}`;
}

function idPart(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]+/g, '-');
}

/** `AgentPr`: `<forge>:<owner>/<name>#<number>`. */
export function pullRequestLabel(repo: ForgeRepository, number: number): string {
  return `${forgeRepositoryKey(repo)}#${number}`;
}

// ---------------------------------------------------------------------------------------------
// The hidden marker on everything the harness writes

const MARKER_PREFIX = '<!-- agent-harness:';
const MARKER_KEY = /^[A-Za-z0-9:._#/-]{1,120}$/;

/**
 * The hidden marker that ends every body the harness writes: `<!-- agent-harness:<key> -->`. It is
 * how a retried write finds the comment it already wrote, and how the harness tells its own comments
 * from a person's even when both go out under the same account.
 */
export function agentMarker(key: string): string {
  if (!MARKER_KEY.test(key))
    throw new Error(`a marker key must match ${MARKER_KEY.source}, got ${JSON.stringify(key)}`);
  return `${MARKER_PREFIX}${key} -->`;
}

/** The marker keys in a body (none: a person wrote it). */
export function markerKeys(body: string): string[] {
  const keys: string[] = [];
  for (const match of body.matchAll(/<!-- agent-harness:([A-Za-z0-9:._#/-]{1,120}) -->/g)) keys.push(match[1]!);
  return keys;
}

export function isAgentBody(body: string): boolean {
  return body.includes(MARKER_PREFIX);
}

/** `body` with the section `name` set to `markdown` (between its two markers; appended when absent). */
export function withSection(body: string, name: string, markdown: string): string {
  const start = agentMarker(`section:${name}`);
  const end = agentMarker(`section-end:${name}`);
  const block = `${start}\n${markdown.trim()}\n${end}`;
  const from = body.indexOf(start);
  const to = body.indexOf(end);
  if (from >= 0 && to > from) return `${body.slice(0, from)}${block}${body.slice(to + end.length)}`;
  return `${body.trimEnd()}\n\n${block}\n`;
}

/** `body` ending with the marker of `key` (a body that already has it is returned as it is). */
export function withMarker(body: string, key: string): string {
  const marker = agentMarker(key);
  return body.includes(marker) ? body : `${body.trimEnd()}\n\n${marker}\n`;
}

// ---------------------------------------------------------------------------------------------
// What the forge activities read and write

export type PullRequestState = 'open' | 'closed' | 'merged';

export interface PullRequestInfo {
  number: number;
  /** The pull request's page. */
  url: string;
  state: PullRequestState;
  draft: boolean;
  title: string;
  headRef: string;
  headSha: string;
  baseRef: string;
  author: string;
  labels: string[];
}

export interface ForgeUserComment {
  id: number;
  author: string;
  body: string;
  createdAt: string;
  url?: string;
}

/** A line comment of a review. */
export interface ReviewComment extends ForgeUserComment {
  reviewId: number;
  path: string;
  /** The line in the new file (0: a comment on an old line). */
  line: number;
  /** The diff hunk it was made on. */
  diffHunk?: string;
}

export type ReviewState = 'APPROVED' | 'REQUEST_CHANGES' | 'COMMENT' | 'PENDING' | 'DISMISSED' | 'OTHER';

export interface Review {
  id: number;
  author: string;
  state: ReviewState;
  body: string;
  submittedAt: string;
  /** The commit the review was made on. */
  commit: string;
  /** Made on an older head (a push since). */
  stale: boolean;
}

export type CheckState = 'success' | 'pending' | 'failure' | 'error' | 'none';

export interface CheckResult {
  /** The status context or check name (`ci/test`). */
  name: string;
  state: CheckState;
  description: string;
  targetUrl?: string;
  /** The end of the failure's log, for a failing check whose log could be read (a few KiB). */
  log?: string;
  /** Why its log could not be read. */
  logUnavailable?: string;
}

export interface CommitChecks {
  sha: string;
  /** The combined state: failure when any failed, pending when any runs, success when all passed, none without any. */
  state: CheckState;
  checks: CheckResult[];
}

export type RepositoryPermission = 'none' | 'read' | 'write' | 'admin' | 'owner';

export interface IssueInfo {
  number: number;
  title: string;
  body: string;
  author: string;
  state: 'open' | 'closed';
  labels: string[];
  isPull: boolean;
  url: string;
}

/** Ids the workflow has handled, as sorted ranges (`[[3, 9], [12, 12]]`): small in every activity input. */
export type IdRanges = Array<[number, number]>;

export function addIdsToRanges(ranges: IdRanges, ids: Iterable<number>): IdRanges {
  const all = [...ranges.flatMap(([from, to]) => (to - from < 10_000 ? rangeOf(from, to) : [from, to])), ...ids];
  const sorted = [...new Set(all)].sort((a, b) => a - b);
  const out: IdRanges = [];
  for (const id of sorted) {
    const last = out[out.length - 1];
    if (last && id === last[1] + 1) last[1] = id;
    else out.push([id, id]);
  }
  return out;
}

export function inIdRanges(ranges: IdRanges, id: number): boolean {
  return ranges.some(([from, to]) => id >= from && id <= to);
}

function rangeOf(from: number, to: number): number[] {
  const out: number[] = [];
  for (let id = from; id <= to; id += 1) out.push(id);
  return out;
}

export interface UpsertPullRequestInput extends ForgeRepository {
  head: string;
  /** The branch to merge into; default: the repository's default branch. */
  base?: string;
  title: string;
  body: string;
  /** Open as a draft (Gitea: a `WIP: ` title prefix; GitHub: `draft: true`). Applies when it is created. */
  draft: boolean;
  /** What `body` is marked with, so the harness's own text is recognised. */
  markerKey: string;
}

export type UpsertPullRequestResult =
  | { outcome: 'created' | 'updated'; pullRequest: PullRequestInfo }
  /** A pull request for the branch was closed without merging: the harness does not open another. */
  | { outcome: 'closed-before'; pullRequest: PullRequestInfo };

export interface ReadPullRequestInput extends ForgeRepository {
  number: number;
  /** Reviews and comments already handled (not returned again). */
  handledReviews: IdRanges;
  handledComments: IdRanges;
  /** Read the head commit's checks, with the logs of failing ones. */
  checks: boolean;
  /** Heads whose checks are not read again (their round ran, or was given up on). */
  skipCheckHeads?: string[];
}

export interface PullRequestActivity {
  pullRequest: PullRequestInfo;
  /** Submitted reviews not handled yet, by people (the harness's own are left out). */
  reviews: Review[];
  /** Line comments not handled yet, by people. */
  reviewComments: ReviewComment[];
  /** Conversation comments not handled yet, by people. */
  issueComments: ForgeUserComment[];
  checks?: CommitChecks;
}

export interface PostCommentInput extends ForgeRepository {
  /** The issue or pull request commented on. */
  issue: number;
  body: string;
  /** Marks the comment; a comment with this marker already there is returned instead of a new one. */
  markerKey: string;
  /** A reply in the thread of this review comment (on a pull request). */
  replyTo?: { commentId: number; reviewId: number };
  /** The issue is a pull request: its review threads count towards the hourly bound too. */
  onPullRequest?: boolean;
}

export type PostCommentResult =
  | { posted: true; id: number; existed: boolean; url?: string }
  /** The harness wrote `commentsPerHour` comments on this issue in the last hour: try again after `retryAfterMs`. */
  | { posted: false; limited: true; retryAfterMs: number };

export interface SetLabelsInput extends ForgeRepository {
  issue: number;
  add?: string[];
  remove?: string[];
}

export interface BranchCheck {
  defaultBranch: string;
  /** The branch exists on the forge. */
  exists: boolean;
  /** A protection rule covers it. */
  protected: boolean;
}

export interface ForgeActivities {
  /** Opens the branch's pull request, or updates the open one in place (never a second for one branch). */
  upsertPullRequest(input: UpsertPullRequestInput): Promise<UpsertPullRequestResult>;
  /** The pull request with what happened on it that the caller has not handled, and its head's checks. */
  readPullRequest(input: ReadPullRequestInput): Promise<PullRequestActivity>;
  /** Rewrites one section of a pull request's body (added at its end the first time); the rest stays. */
  updatePullRequestSection(
    input: ForgeRepository & { number: number; section: string; markdown: string },
  ): Promise<void>;
  /** Writes a comment or a review reply once (found by its marker when it is already there). */
  postComment(input: PostCommentInput): Promise<PostCommentResult>;
  /** The head commit's statuses and checks, with the end of each failing one's log. */
  readChecks(input: ForgeRepository & { sha: string }): Promise<CommitChecks>;
  readIssue(input: ForgeRepository & { number: number }): Promise<IssueInfo>;
  setLabels(input: SetLabelsInput): Promise<{ labels: string[] }>;
  /** What `user` may do in the repository (the forge's answer, or the allow-list's). */
  userPermission(input: ForgeRepository & { user: string }): Promise<{ permission: RepositoryPermission; via: string }>;
  /** The default branch, and whether `branch` exists and is protected. */
  checkBranch(input: ForgeRepository & { branch: string }): Promise<BranchCheck>;
  /** The open pull request whose head is at `sha` (a status event names a commit only). */
  findPullRequestByHead(input: ForgeRepository & { sha: string }): Promise<{ number?: number }>;
  /** Issues and comments since the last poll: the fallback when webhooks cannot reach the harness. */
  pollRepository(input: PollRepositoryInput): Promise<PollRepositoryResult>;
  /** What the worker's settings say of a forge: its trigger label, web address and task defaults. */
  forgeTaskSettings(input: Pick<ForgeRepository, 'forge'>): Promise<ForgeTaskSettings>;
}

export interface ForgeTaskSettings {
  label: string;
  webUrl: string;
  /** The Temporal Web UI's page of workflows (`<ui>/namespaces/<ns>/workflows/`): a workflow's link is it plus its id. */
  workflowsUrl?: string;
  /** Coding-task fields the forge's tasks start with (`common/pull-request.ts`'s `forgeTaskDefaultsSchema`). */
  tasks: Readonly<Record<string, unknown>>;
}

/** The `type` of every ApplicationFailure the forge activities throw. */
export const FORGE_FAILURE_TYPES = {
  /** The forge is not in AGENT_FORGES, or its secret is missing. Not retryable. */
  notConfigured: 'ForgeNotConfigured',
  /** The forge refused the token (401/403). Not retryable. */
  auth: 'ForgeAuthFailed',
  /** The repository, pull request or comment does not exist. Not retryable. */
  notFound: 'ForgeNotFound',
  /** The forge refused the request as invalid (400/409/422). Not retryable. */
  refused: 'ForgeRefused',
  /** A push to a branch the harness must never push to. Not retryable. */
  unsafeBranch: 'ForgeUnsafeBranch',
  /** Anything else: the network, a 5xx, a rate limit (with its wait). Retryable. */
  unavailable: 'ForgeUnavailable',
} as const;

export type ForgeFailureType = (typeof FORGE_FAILURE_TYPES)[keyof typeof FORGE_FAILURE_TYPES];

export const FORGE_NON_RETRYABLE_FAILURE_TYPES: readonly ForgeFailureType[] = [
  FORGE_FAILURE_TYPES.notConfigured,
  FORGE_FAILURE_TYPES.auth,
  FORGE_FAILURE_TYPES.notFound,
  FORGE_FAILURE_TYPES.refused,
  FORGE_FAILURE_TYPES.unsafeBranch,
];

// ---------------------------------------------------------------------------------------------
// Events: what a webhook delivery or a poll says happened

/** A command in a comment: `/agent <instructions>` at the start of a line. */
export function agentCommand(body: string): string | undefined {
  const match = /^\/agent(?:[ \t]+(.*))?$/m.exec(body.replace(/\r\n/g, '\n'));
  if (!match) return undefined;
  const first = (match[1] ?? '').trim();
  const rest = body
    .replace(/\r\n/g, '\n')
    .slice(match.index + match[0].length)
    .trim();
  return [first, rest].filter(Boolean).join('\n').trim();
}

export const forgeEventSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('issue-labelled'),
    issue: z.int().positive(),
    labels: z.array(z.string().max(200)).max(100),
    sender: z.string().min(1).max(200),
  }),
  z.strictObject({
    kind: z.literal('comment'),
    issue: z.int().positive(),
    isPull: z.boolean(),
    commentId: z.int().positive(),
    body: z.string().max(65_536),
    author: z.string().min(1).max(200),
  }),
  z.strictObject({
    kind: z.literal('review'),
    pullRequest: z.int().positive(),
    sender: z.string().min(1).max(200),
  }),
  z.strictObject({
    kind: z.literal('status'),
    sha: z.string().regex(/^[0-9a-f]{7,64}$/, 'must be a commit id'),
    state: z.string().max(40),
  }),
  z.strictObject({
    kind: z.literal('pull-request'),
    pullRequest: z.int().positive(),
    action: z.string().min(1).max(40),
  }),
]);
export type ForgeEvent = z.output<typeof forgeEventSchema>;

export const FORGE_EVENT_WORKFLOW_TYPE = 'forgeEvent';

export const forgeEventInputSchema = z.strictObject({
  forge: forgeNameSchema,
  repository: repositoryNameSchema,
  /** `webhook` (with its delivery id) or `poll`. */
  source: z.enum(['webhook', 'poll']),
  deliveryId: z.string().min(1).max(200),
  event: forgeEventSchema,
});
export type ForgeEventInput = z.output<typeof forgeEventInputSchema>;

/**
 * The id of the workflow that handles one event: a comment by its repository and id (the same
 * comment from a webhook and from a poll is one event), anything else by its delivery. Starting it
 * twice is a no-op.
 */
export function forgeEventWorkflowId(
  input: Pick<ForgeEventInput, 'forge' | 'repository' | 'deliveryId' | 'event'>,
): string {
  const key =
    input.event.kind === 'comment'
      ? `comment-${input.repository.replace('/', '-')}-${input.event.commentId}`
      : `delivery-${input.deliveryId}`;
  return `forge-event-${idPart(input.forge)}-${idPart(key)}`.slice(0, 250);
}

export interface ForgeEventResult {
  /** What the event led to: `started <id>`, `signalled <id>`, `refused: …`, `ignored: …`. */
  outcome: string;
}

export interface PollRepositoryInput extends ForgeRepository {
  /** The label that starts a task on an issue. */
  label: string;
  /** Comments after this time (ISO), and after these ids. */
  since?: string;
  handledComments: IdRanges;
  handledIssues: IdRanges;
}

export interface PollRepositoryResult {
  /** Open issues carrying the label that are not handled yet. */
  labelled: Array<{ issue: number; labels: string[]; author: string }>;
  /** New comments with an `/agent` command, by people. */
  commands: Array<{ issue: number; isPull: boolean; commentId: number; body: string; author: string }>;
  /** The next poll's `since`: this read's time less an overlap (the handled ids keep what it reads again from counting twice). */
  readAt: string;
}

export const FORGE_POLLER_WORKFLOW_TYPE = 'forgePoller';

/** `forge-poller-<forge>-<owner>-<name>`: one poller per repository. */
export function forgePollerId(repo: ForgeRepository): string {
  return `forge-poller-${idPart(repo.forge)}-${idPart(repo.repository.replace('/', '-'))}`;
}

export const forgePollerInputSchema = z.strictObject({
  forge: forgeNameSchema,
  repository: repositoryNameSchema,
  /** How often the repository is read (default 2 min). */
  intervalMs: z.int().min(5_000).max(86_400_000).default(120_000),
});
export type ForgePollerInput = z.input<typeof forgePollerInputSchema>;

/** The poller's reads so far and its last error (`forgePollerStatus`). */
export const forgePollerStatusQuery = defineQuery<ForgePollerCarry>('forgePollerStatus');

/** What survives the poller's continue-as-new. */
export interface ForgePollerCarry {
  since?: string;
  handledComments: IdRanges;
  handledIssues: IdRanges;
  polls: number;
  lastError?: string;
}
