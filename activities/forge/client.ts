/**
 * One forge's REST API as the harness uses it, written once over the dialects (`dialects.ts`).
 * Writes converge: a pull request is found by its branch before one is opened, a comment by its
 * marker before one is written; the forge's own record is the one that counts across workers and
 * crashes.
 */
import {
  FORGE_FAILURE_TYPES,
  inIdRanges,
  isAgentBody,
  markerKeys,
  withMarker,
  withSection,
  type BranchCheck,
  type CheckResult,
  type CommitChecks,
  type ForgeRepository,
  type ForgeUserComment,
  type IdRanges,
  type IssueInfo,
  type PollRepositoryInput,
  type PollRepositoryResult,
  type PostCommentInput,
  type PostCommentResult,
  type PullRequestActivity,
  type PullRequestInfo,
  type ReadPullRequestInput,
  type RepositoryPermission,
  type Review,
  type ReviewComment,
  type UpsertPullRequestInput,
  type UpsertPullRequestResult,
} from '../../common/forge';
import {
  checkRunState,
  combinedState,
  dialectOf,
  type ForgeDialect,
  type RawCheckRun,
  type RawComment,
  type RawPull,
  type RawReview,
  type RawReviewComment,
  type RawStatus,
} from './dialects';
import { forgeFailure, ForgeHttp } from './http';
import type { ForgeSettings } from './settings';

/** The end of a failing check's log that goes into a fix round's goal. */
const LOG_TAIL_BYTES = 8 * 1024;
const HOUR_MS = 3_600_000;
const POLL_OVERLAP_MS = HOUR_MS;

export interface ForgeClientOptions {
  forge: ForgeSettings;
  token: string;
  fetch?: typeof fetch;
  signal?: AbortSignal;
  now?: () => number;
}

export class ForgeClient {
  readonly dialect: ForgeDialect;
  private readonly http: ForgeHttp;
  private readonly now: () => number;

  constructor(private readonly options: ForgeClientOptions) {
    this.dialect = dialectOf(options.forge.kind);
    this.now = options.now ?? Date.now;
    this.http = new ForgeHttp({
      apiUrl: options.forge.apiUrl,
      authorization: this.dialect.authorization(options.token),
      forge: options.forge.name,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  private repoPath(repo: ForgeRepository): string {
    const [owner, name] = repo.repository.split('/');
    return `/repos/${encodeURIComponent(owner!)}/${encodeURIComponent(name!)}`;
  }

  private list<T>(path: string, query: Record<string, string | number | undefined> = {}): Promise<T[]> {
    return this.http.list<T>(path, query, (page) => this.dialect.page(page));
  }

  async defaultBranch(repo: ForgeRepository): Promise<string> {
    const { body } = await this.http.request<{ default_branch: string }>('GET', this.repoPath(repo));
    return body.default_branch;
  }

  async checkBranch(repo: ForgeRepository & { branch: string }): Promise<BranchCheck> {
    const defaultBranch = await this.defaultBranch(repo);
    const { status, body } = await this.http.request<{ protected?: boolean }>(
      'GET',
      `${this.repoPath(repo)}/branches/${encodeURIComponent(repo.branch)}`,
      { allow404: true },
    );
    return { defaultBranch, exists: status !== 404, protected: status !== 404 && body?.protected === true };
  }

  /** The branch's pull requests, newest first. */
  private async pullsOfBranch(repo: ForgeRepository, head: string, state: 'open' | 'all'): Promise<RawPull[]> {
    const owner = repo.repository.split('/')[0]!;
    const pulls = await this.list<RawPull>(`${this.repoPath(repo)}/pulls`, {
      state,
      ...this.dialect.branchQuery(owner, head),
    });
    return pulls.filter((pull) => pull.head?.ref === head).sort((a, b) => b.number - a.number);
  }

  async upsertPullRequest(input: UpsertPullRequestInput): Promise<UpsertPullRequestResult> {
    const body = withMarker(input.body, input.markerKey);
    const pulls = await this.pullsOfBranch(input, input.head, 'all');
    const open = pulls.find((pull) => pull.state === 'open');
    if (open) {
      const { body: updated } = await this.http.request<RawPull>(
        'PATCH',
        `${this.repoPath(input)}/pulls/${open.number}`,
        {
          body: { body },
        },
      );
      return { outcome: 'updated', pullRequest: this.pullInfo(updated) };
    }
    // The branch's latest pull request was closed by a person: respect it, open none.
    const latest = pulls[0];
    if (latest && !this.dialect.isMerged(latest))
      return { outcome: 'closed-before', pullRequest: this.pullInfo(latest) };
    const branch = await this.checkBranch({ ...input, branch: input.head });
    if (input.head === (input.base ?? branch.defaultBranch))
      throw forgeFailure(
        FORGE_FAILURE_TYPES.refused,
        `${input.head} is the pull request's own base: there is nothing to propose`,
      );
    // Gitea lists a pushed branch about a second after the push: the retry's wait covers it.
    if (!branch.exists)
      throw forgeFailure(
        FORGE_FAILURE_TYPES.unavailable,
        `${this.options.forge.name}: the branch ${input.head} is not on ${input.repository} yet`,
        1_000,
      );
    try {
      const { body: created } = await this.http.request<RawPull>('POST', `${this.repoPath(input)}/pulls`, {
        body: {
          head: input.head,
          base: input.base ?? branch.defaultBranch,
          body,
          ...this.dialect.createPull(input.title, input.draft),
        },
      });
      return { outcome: 'created', pullRequest: this.pullInfo(created) };
    } catch (err) {
      // A second pull request for the branch is refused: an earlier attempt opened it after all.
      const again = (await this.pullsOfBranch(input, input.head, 'open'))[0];
      if (again) return { outcome: 'updated', pullRequest: this.pullInfo(again) };
      throw err;
    }
  }

  async updatePullRequestSection(
    input: ForgeRepository & { number: number; section: string; markdown: string },
  ): Promise<void> {
    const path = `${this.repoPath(input)}/pulls/${input.number}`;
    const { body: pull } = await this.http.request<RawPull>('GET', path);
    const body = withSection(pull.body ?? '', input.section, input.markdown);
    if (body !== pull.body) await this.http.request('PATCH', path, { body: { body } });
  }

  async pullRequest(repo: ForgeRepository, number: number): Promise<PullRequestInfo> {
    const { body } = await this.http.request<RawPull>('GET', `${this.repoPath(repo)}/pulls/${number}`);
    return this.pullInfo(body);
  }

  private pullInfo(pull: RawPull): PullRequestInfo {
    const merged = this.dialect.isMerged(pull);
    return {
      number: pull.number,
      url: pull.html_url,
      state: merged ? 'merged' : pull.state === 'open' ? 'open' : 'closed',
      draft: this.dialect.isDraft(pull),
      title: pull.title,
      headRef: pull.head.ref,
      headSha: pull.head.sha,
      baseRef: pull.base.ref,
      author: pull.user?.login ?? '',
      labels: (pull.labels ?? []).map((label) => label.name),
    };
  }

  async readPullRequest(input: ReadPullRequestInput): Promise<PullRequestActivity> {
    const pullRequest = await this.pullRequest(input, input.number);
    const rawReviews = await this.list<RawReview>(`${this.repoPath(input)}/pulls/${input.number}/reviews`);
    const submitted = rawReviews.filter((review) => this.dialect.reviewState(review.state) !== 'PENDING');
    const reviews: Review[] = submitted
      .filter((review) => !inIdRanges(input.handledReviews, review.id) && !isAgentBody(review.body ?? ''))
      .map((review) => ({
        id: review.id,
        author: review.user?.login ?? '',
        state: this.dialect.reviewState(review.state),
        body: review.body ?? '',
        submittedAt: review.submitted_at ?? '',
        commit: review.commit_id ?? '',
        stale: review.stale === true,
      }));
    const reviewComments = (await this.reviewComments(input, input.number, submitted)).filter(
      (comment) => !inIdRanges(input.handledComments, comment.id) && !isAgentBody(comment.body),
    );
    const issueComments = (await this.issueComments(input, input.number)).filter(
      (comment) => !inIdRanges(input.handledComments, comment.id) && !isAgentBody(comment.body),
    );
    return {
      pullRequest,
      reviews,
      reviewComments,
      issueComments,
      ...(input.checks && pullRequest.state === 'open' && !input.skipCheckHeads?.includes(pullRequest.headSha)
        ? { checks: await this.readChecks({ ...input, sha: pullRequest.headSha }) }
        : {}),
    };
  }

  private async reviewComments(repo: ForgeRepository, number: number, reviews: RawReview[]): Promise<ReviewComment[]> {
    const raw: RawReviewComment[] = [];
    if (this.dialect.reviewComments === 'per-pull') {
      raw.push(...(await this.list<RawReviewComment>(`${this.repoPath(repo)}/pulls/${number}/comments`)));
    } else {
      for (const review of reviews) {
        const { body } = await this.http.request<RawReviewComment[]>(
          'GET',
          `${this.repoPath(repo)}/pulls/${number}/reviews/${review.id}/comments`,
        );
        raw.push(...(body ?? []).map((comment) => ({ ...comment, pull_request_review_id: review.id })));
      }
    }
    return raw.map((comment) => ({
      id: comment.id,
      author: comment.user?.login ?? '',
      body: comment.body,
      createdAt: comment.created_at,
      ...(comment.html_url ? { url: comment.html_url } : {}),
      reviewId: comment.pull_request_review_id ?? 0,
      path: comment.path,
      line: this.dialect.commentLine(comment),
      ...(comment.diff_hunk ? { diffHunk: comment.diff_hunk.slice(-2_000) } : {}),
    }));
  }

  private async issueComments(repo: ForgeRepository, issue: number): Promise<ForgeUserComment[]> {
    const raw = await this.list<RawComment>(`${this.repoPath(repo)}/issues/${issue}/comments`);
    return raw.map((comment) => ({
      id: comment.id,
      author: comment.user?.login ?? '',
      body: comment.body,
      createdAt: comment.created_at,
      ...(comment.html_url ? { url: comment.html_url } : {}),
    }));
  }

  async postComment(input: PostCommentInput): Promise<PostCommentResult> {
    const body = withMarker(input.body, input.markerKey);
    const existing: Array<{ id: number; body: string; created_at: string; html_url?: string }> = [
      ...(await this.list<RawComment>(`${this.repoPath(input)}/issues/${input.issue}/comments`)),
    ];
    if (input.replyTo || input.onPullRequest)
      existing.push(...(await this.pullRequestLineComments(input, input.issue)));
    const found = existing.find((comment) => markerKeys(comment.body).includes(input.markerKey));
    if (found) return { posted: true, id: found.id, existed: true, ...(found.html_url ? { url: found.html_url } : {}) };
    const since = this.now() - HOUR_MS;
    const recent = existing
      .filter((comment) => isAgentBody(comment.body) && Date.parse(comment.created_at) > since)
      .map((comment) => Date.parse(comment.created_at))
      .sort((a, b) => a - b);
    if (recent.length >= this.options.forge.commentsPerHour) {
      const oldest = recent[recent.length - this.options.forge.commentsPerHour]!;
      return { posted: false, limited: true, retryAfterMs: Math.max(1_000, oldest + HOUR_MS - this.now()) };
    }
    const path = input.replyTo
      ? `${this.repoPath(input)}/pulls/${input.issue}/comments/${input.replyTo.commentId}/replies`
      : `${this.repoPath(input)}/issues/${input.issue}/comments`;
    const { body: created } = await this.http.request<{ id: number; html_url?: string }>('POST', path, {
      body: { body },
    });
    return { posted: true, id: created.id, existed: false, ...(created.html_url ? { url: created.html_url } : {}) };
  }

  /** Every line comment of a pull request, replies included (the hourly bound counts them with the rest). */
  private async pullRequestLineComments(repo: ForgeRepository, number: number): Promise<RawComment[]> {
    if (this.dialect.reviewComments === 'per-pull')
      return this.list<RawComment>(`${this.repoPath(repo)}/pulls/${number}/comments`);
    const reviews = await this.list<RawReview>(`${this.repoPath(repo)}/pulls/${number}/reviews`);
    const comments: RawComment[] = [];
    for (const review of reviews) {
      const { body } = await this.http.request<RawComment[]>(
        'GET',
        `${this.repoPath(repo)}/pulls/${number}/reviews/${review.id}/comments`,
      );
      comments.push(...(body ?? []));
    }
    return comments;
  }

  async readChecks(input: ForgeRepository & { sha: string }): Promise<CommitChecks> {
    const { body } = await this.http.request<{ statuses?: RawStatus[] | null }>(
      'GET',
      `${this.repoPath(input)}/commits/${encodeURIComponent(input.sha)}/status`,
    );
    // The latest status per context (the combined view holds only those).
    const checks: CheckResult[] = (body?.statuses ?? []).map((status) => ({
      name: status.context,
      state: this.dialect.statusState(status),
      description: status.description ?? '',
      ...(status.target_url ? { targetUrl: status.target_url } : {}),
    }));
    if (this.dialect.checkRuns) {
      const { body: runs } = await this.http.request<{ check_runs?: RawCheckRun[] }>(
        'GET',
        `${this.repoPath(input)}/commits/${encodeURIComponent(input.sha)}/check-runs`,
      );
      for (const run of runs?.check_runs ?? []) {
        const text = [run.output?.title, run.output?.summary, run.output?.text].filter(Boolean).join('\n');
        checks.push({
          name: run.name,
          state: checkRunState(run),
          description: run.output?.title ?? '',
          ...(run.details_url ? { targetUrl: run.details_url } : {}),
          ...(text ? { log: tail(text) } : {}),
        });
      }
    }
    for (const check of checks) {
      if ((check.state === 'failure' || check.state === 'error') && check.log === undefined && check.targetUrl) {
        Object.assign(check, await this.failureLog(check.targetUrl));
      }
    }
    return { sha: input.sha, state: combinedState(checks.map((check) => check.state)), checks };
  }

  /** The end of a failing check's log, from its target URL when the host is the forge's or allowed. */
  private async failureLog(targetUrl: string): Promise<Pick<CheckResult, 'log' | 'logUnavailable'>> {
    let url: URL;
    try {
      url = new URL(targetUrl);
    } catch {
      return { logUnavailable: 'its target URL is not a URL' };
    }
    const forgeOrigin = new URL(this.options.forge.url).origin;
    const sameForge = url.origin === forgeOrigin;
    if (
      !sameForge &&
      !this.options.forge.logHosts.includes(url.host) &&
      !this.options.forge.logHosts.includes(url.hostname)
    )
      return { logUnavailable: `${url.host} is not in the forge's logHosts` };
    try {
      const response = await (this.options.fetch ?? fetch)(url, {
        // The forge's own pages get the token; another host never does.
        headers: sameForge ? { authorization: this.dialect.authorization(this.options.token) } : {},
        signal: AbortSignal.timeout(20_000),
        redirect: sameForge ? 'follow' : 'error',
      });
      if (!response.ok) return { logUnavailable: `${url.host} answered ${response.status}` };
      return { log: tail(await response.text()) };
    } catch (err) {
      return { logUnavailable: `reading it failed: ${(err as Error).message}` };
    }
  }

  async readIssue(repo: ForgeRepository, number: number): Promise<IssueInfo> {
    const { body } = await this.http.request<{
      number: number;
      title: string;
      body?: string | null;
      user?: { login?: string } | null;
      state: string;
      labels?: Array<{ name: string }> | null;
      pull_request?: unknown;
      html_url: string;
    }>('GET', `${this.repoPath(repo)}/issues/${number}`);
    return {
      number: body.number,
      title: body.title,
      body: body.body ?? '',
      author: body.user?.login ?? '',
      state: body.state === 'open' ? 'open' : 'closed',
      labels: (body.labels ?? []).map((label) => label.name),
      isPull: body.pull_request !== undefined && body.pull_request !== null,
      url: body.html_url,
    };
  }

  async setLabels(input: ForgeRepository & { issue: number; add?: string[]; remove?: string[] }): Promise<string[]> {
    const path = `${this.repoPath(input)}/issues/${input.issue}/labels`;
    let labels: Array<{ id?: number; name: string }> = [];
    if (input.add?.length)
      labels = (await this.http.request<typeof labels>('POST', path, { body: { labels: input.add } })).body;
    else labels = (await this.http.request<typeof labels>('GET', path)).body ?? [];
    for (const name of input.remove ?? []) {
      const label = labels.find((l) => l.name === name);
      if (!label) continue;
      const key = this.dialect.removeLabelBy === 'id' ? String(label.id) : encodeURIComponent(name);
      await this.http.request('DELETE', `${path}/${key}`, { allow404: true });
      labels = labels.filter((l) => l.name !== name);
    }
    return labels.map((label) => label.name);
  }

  async userPermission(
    repo: ForgeRepository,
    user: string,
  ): Promise<{ permission: RepositoryPermission; via: string }> {
    if (this.options.forge.allowUsers.includes(user)) return { permission: 'write', via: 'allowUsers' };
    try {
      const { body } = await this.http.request<{ permission: string }>(
        'GET',
        `${this.repoPath(repo)}/collaborators/${encodeURIComponent(user)}/permission`,
      );
      return { permission: this.dialect.permission(body.permission), via: 'the forge' };
    } catch (err) {
      const type = (err as { type?: string }).type;
      if (type === FORGE_FAILURE_TYPES.auth)
        throw forgeFailure(
          FORGE_FAILURE_TYPES.auth,
          `${this.options.forge.name}: cannot read ${user}'s permission on ${repo.repository}: the bot's token needs admin on the repository for this (or list the user in allowUsers)`,
        );
      if (type === FORGE_FAILURE_TYPES.notFound) return { permission: 'none', via: 'the forge (no such user)' };
      throw err;
    }
  }

  async findPullRequestByHead(repo: ForgeRepository, sha: string): Promise<number | undefined> {
    const open = await this.list<RawPull>(`${this.repoPath(repo)}/pulls`, { state: 'open' });
    return open.find((pull) => pull.head?.sha === sha)?.number;
  }

  async pollRepository(input: PollRepositoryInput): Promise<PollRepositoryResult> {
    // The next poll reads back an hour before this one: a comment the forge indexed late, or a clock
    // apart from the forge's, is still seen (the handled ids keep it from being handed over twice).
    const readAt = new Date(this.now() - POLL_OVERLAP_MS).toISOString();
    const issues = await this.list<{
      number: number;
      labels?: Array<{ name: string }> | null;
      user?: { login?: string } | null;
      pull_request?: unknown;
    }>(`${this.repoPath(input)}/issues`, {
      state: 'open',
      labels: input.label,
      ...(this.dialect.kind === 'gitea' ? { type: 'issues' } : {}),
    });
    const labelled = issues
      .filter((issue) => !issue.pull_request && !inIdRanges(input.handledIssues, issue.number))
      .map((issue) => ({
        issue: issue.number,
        labels: (issue.labels ?? []).map((label) => label.name),
        author: issue.user?.login ?? '',
      }))
      .filter((issue) => issue.labels.includes(input.label));
    const comments = await this.list<RawComment>(`${this.repoPath(input)}/issues/comments`, {
      ...(input.since ? { since: input.since } : {}),
    });
    const commands = comments
      .filter((comment) => !inIdRanges(input.handledComments, comment.id) && !isAgentBody(comment.body))
      .filter((comment) => /^\/agent\b/m.test(comment.body))
      .map((comment) => ({
        issue: Number(/\/(?:issues|pulls)\/(\d+)$/.exec(comment.issue_url ?? '')?.[1] ?? 0),
        isPull: Boolean(comment.pull_request_url),
        commentId: comment.id,
        body: comment.body.slice(0, 65_536),
        author: comment.user?.login ?? '',
      }))
      .filter((command) => command.issue > 0);
    return { labelled, commands, readAt };
  }
}

function tail(text: string): string {
  const buffer = Buffer.from(text, 'utf8');
  if (buffer.length <= LOG_TAIL_BYTES) return text;
  return `[… ${buffer.length - LOG_TAIL_BYTES} bytes before]\n${buffer.subarray(buffer.length - LOG_TAIL_BYTES).toString('utf8')}`;
}

export type { IdRanges };
