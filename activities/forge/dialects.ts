/**
 * Where Gitea's REST API and GitHub's differ, in one place: the client (`client.ts`) is written once
 * over these. Gitea is tested against a real server (`npm run forge`); GitHub is written from its
 * REST reference and is not tested against a real server here (no internet).
 *
 * | what                    | Gitea (1.27)                                   | GitHub                                   |
 * |-------------------------|------------------------------------------------|------------------------------------------|
 * | token header            | `token <t>`                                    | `Bearer <t>`                             |
 * | paging                  | `page`, `limit` (≤ 50)                         | `page`, `per_page` (≤ 100)               |
 * | draft                   | a `WIP: ` title prefix (`draft` is ignored)    | `draft: true` when created               |
 * | a branch's pull request | list and match `head.ref` (`?head=` ignored)   | `?head=<owner>:<branch>&state=all`       |
 * | merged                  | `merged: true`                                 | `merged_at` set                          |
 * | review states           | APPROVED, REQUEST_CHANGES, COMMENT, PENDING    | APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING |
 * | review comments         | per review: `/pulls/{n}/reviews/{id}/comments` | `/pulls/{n}/comments`                    |
 * | a comment's line        | `position` (new line), `original_position`     | `line`, `original_line`                  |
 * | status state field      | `status` in lists                              | `state`                                  |
 * | check runs              | none (Actions off)                             | `/commits/{sha}/check-runs`              |
 * | permission values       | none, read, write, admin, owner                | none, read, triage, write, maintain, admin |
 * | removing a label        | by id: `DELETE /issues/{n}/labels/{id}`        | by name                                  |
 * | adding an unknown label | dropped silently                               | created                                  |
 * | webhook signature       | `X-Gitea-Signature: <hex>`                     | `X-Hub-Signature-256: sha256=<hex>`      |
 */
import type { CheckState, ForgeKind, RepositoryPermission, ReviewState } from '../../common/forge';

/** The parts of a pull request's JSON both forges send. */
export interface RawPull {
  number: number;
  html_url: string;
  state: string;
  draft?: boolean;
  title: string;
  body?: string | null;
  head: { ref: string; sha: string };
  base: { ref: string };
  user?: { login?: string } | null;
  labels?: Array<{ id?: number; name: string }> | null;
  merged?: boolean;
  merged_at?: string | null;
}

export interface RawReview {
  id: number;
  user?: { login?: string } | null;
  state: string;
  body?: string | null;
  submitted_at?: string | null;
  commit_id?: string;
  stale?: boolean;
}

export interface RawReviewComment {
  id: number;
  user?: { login?: string } | null;
  body: string;
  created_at: string;
  html_url?: string;
  pull_request_review_id?: number | null;
  path: string;
  position?: number | null;
  line?: number | null;
  diff_hunk?: string;
  in_reply_to_id?: number;
}

export interface RawComment {
  id: number;
  user?: { login?: string } | null;
  body: string;
  created_at: string;
  html_url?: string;
  issue_url?: string;
  pull_request_url?: string;
}

export interface RawStatus {
  state?: string;
  status?: string;
  context: string;
  description?: string | null;
  target_url?: string | null;
}

export interface RawCheckRun {
  name: string;
  status: string;
  conclusion?: string | null;
  details_url?: string | null;
  output?: { title?: string | null; summary?: string | null; text?: string | null } | null;
}

export interface ForgeDialect {
  kind: ForgeKind;
  authorization(token: string): string;
  page(page: number): Record<string, number>;
  /** The title and extra fields a new pull request is created with. */
  createPull(title: string, draft: boolean): { title: string; draft?: boolean };
  isDraft(pull: RawPull): boolean;
  isMerged(pull: RawPull): boolean;
  /** Query parameters that narrow a list of pull requests to a branch, when the forge honours them. */
  branchQuery(owner: string, branch: string): Record<string, string>;
  reviewState(raw: string): ReviewState;
  /** How the review comments of a pull request are listed. */
  reviewComments: 'per-review' | 'per-pull';
  commentLine(comment: RawReviewComment): number;
  statusState(status: RawStatus): CheckState;
  checkRuns: boolean;
  permission(raw: string): RepositoryPermission;
  removeLabelBy: 'id' | 'name';
}

function checkState(raw: string | undefined): CheckState {
  switch (raw) {
    case 'success':
      return 'success';
    case 'pending':
    case 'running':
    case 'queued':
    case 'in_progress':
      return 'pending';
    case 'error':
      return 'error';
    case 'failure':
    case 'failed':
    case 'cancelled':
    case 'timed_out':
    case 'action_required':
      return 'failure';
    default:
      // An unknown state (Gitea does not validate them, `warning` exists) is treated as not failing.
      return raw ? 'success' : 'none';
  }
}

const WIP = /^\s*(WIP:|\[WIP\])\s*/i;

export const GITEA: ForgeDialect = {
  kind: 'gitea',
  authorization: (token) => `token ${token}`,
  page: (page) => ({ page, limit: 50 }),
  createPull: (title, draft) => ({ title: draft && !WIP.test(title) ? `WIP: ${title}` : title }),
  isDraft: (pull) => pull.draft === true || WIP.test(pull.title),
  isMerged: (pull) => pull.merged === true,
  branchQuery: () => ({}),
  reviewState: (raw) => {
    switch (raw) {
      case 'APPROVED':
      case 'REQUEST_CHANGES':
      case 'COMMENT':
      case 'PENDING':
        return raw;
      default:
        return 'OTHER';
    }
  },
  reviewComments: 'per-review',
  commentLine: (comment) => comment.position ?? 0,
  statusState: (status) => checkState(status.status ?? status.state),
  checkRuns: false,
  permission: (raw) => (raw === 'owner' || raw === 'admin' || raw === 'write' || raw === 'read' ? raw : 'none'),
  removeLabelBy: 'id',
};

export const GITHUB: ForgeDialect = {
  kind: 'github',
  authorization: (token) => `Bearer ${token}`,
  page: (page) => ({ page, per_page: 100 }),
  createPull: (title, draft) => ({ title, draft }),
  isDraft: (pull) => pull.draft === true,
  isMerged: (pull) => Boolean(pull.merged_at) || pull.merged === true,
  branchQuery: (owner, branch) => ({ head: `${owner}:${branch}` }),
  reviewState: (raw) => {
    switch (raw) {
      case 'APPROVED':
        return 'APPROVED';
      case 'CHANGES_REQUESTED':
        return 'REQUEST_CHANGES';
      case 'COMMENTED':
        return 'COMMENT';
      case 'PENDING':
        return 'PENDING';
      case 'DISMISSED':
        return 'DISMISSED';
      default:
        return 'OTHER';
    }
  },
  reviewComments: 'per-pull',
  commentLine: (comment) => comment.line ?? 0,
  statusState: (status) => checkState(status.state),
  checkRuns: true,
  permission: (raw) => {
    if (raw === 'admin') return 'admin';
    if (raw === 'maintain' || raw === 'write') return 'write';
    if (raw === 'triage' || raw === 'read') return 'read';
    return 'none';
  },
  removeLabelBy: 'name',
};

export function dialectOf(kind: ForgeKind): ForgeDialect {
  return kind === 'gitea' ? GITEA : GITHUB;
}

/** A check run's state: queued and running are pending; a conclusion decides the rest. */
export function checkRunState(run: RawCheckRun): CheckState {
  if (run.status !== 'completed') return 'pending';
  if (run.conclusion === 'success' || run.conclusion === 'neutral' || run.conclusion === 'skipped') return 'success';
  return checkState(run.conclusion ?? 'failure');
}

/** One state of many: failure (or error) when any failed, pending when any runs, success when all passed. */
export function combinedState(states: readonly CheckState[]): CheckState {
  if (states.length === 0) return 'none';
  if (states.includes('failure')) return 'failure';
  if (states.includes('error')) return 'error';
  if (states.includes('pending')) return 'pending';
  return 'success';
}
