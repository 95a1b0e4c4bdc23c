/**
 * The forge activities against a real Gitea (`npm run test:forge`): one draft pull request per
 * branch, updated in place; reviews, line comments and conversation comments read once and never
 * the harness's own; replies and comments written once whatever the retries; the hourly bound;
 * commit statuses with the failing one's log; labels, permissions, branch checks and polling.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createForgeActivities } from '../../activities/forge/activities';
import { parseForges } from '../../activities/forge/settings';
import { addIdsToRanges, type ForgeActivities } from '../../common/forge';
import { FORGE, pushChange, READER, REVIEWER, startTestForge, type TestForge } from '../support/forge';

let forge: TestForge;
let forgeActivities: ForgeActivities;
let logServer: http.Server;
let logHost: string;
const FAILURE_LOG = `${'npm test output\n'.repeat(1_000)}not ok 3 - title capitalises every word\n`;

beforeAll(async () => {
  logServer = http.createServer((request, response) => {
    response.writeHead(request.url === '/logs/42' ? 200 : 404, { 'content-type': 'text/plain' });
    response.end(request.url === '/logs/42' ? FAILURE_LOG : 'no such log');
  });
  await new Promise<void>((resolve) => logServer.listen(0, '127.0.0.1', resolve));
  logHost = `127.0.0.1:${(logServer.address() as AddressInfo).port}`;
  forge = await startTestForge({ commentsPerHour: 3, logHosts: [logHost] });
  forgeActivities = createForgeActivities({ forges: forge.forges, secrets: forge.secrets });
});

afterAll(async () => {
  await forge?.stop();
  await new Promise((resolve) => logServer?.close(resolve));
});

const repo = () => ({ forge: FORGE, repository: forge.repo.fullName });

describe('pull requests', () => {
  it('opens one draft pull request per branch and updates it in place', async () => {
    await pushChange(forge, forge.botToken, 'agent/one', { 'NOTES.md': 'one\n' });
    const first = await forgeActivities.upsertPullRequest({
      ...repo(),
      head: 'agent/one',
      title: 'Night one',
      body: 'first report',
      draft: true,
      markerKey: 'task:one',
    });
    expect(first.outcome).toBe('created');
    expect(first.pullRequest).toMatchObject({ state: 'open', draft: true, headRef: 'agent/one', baseRef: 'main' });
    expect(first.pullRequest.title).toBe('WIP: Night one');
    const second = await forgeActivities.upsertPullRequest({
      ...repo(),
      head: 'agent/one',
      title: 'Night two',
      body: 'second report',
      draft: true,
      markerKey: 'task:one',
    });
    expect(second).toMatchObject({ outcome: 'updated', pullRequest: { number: first.pullRequest.number } });
    const pulls = await forge.api<Array<{ number: number; body: string; title: string }>>(
      forge.reviewerToken,
      'GET',
      `/repos/${forge.repo.fullName}/pulls?state=all`,
    );
    const ofBranch = pulls.filter((pull) => pull.number === first.pullRequest.number);
    expect(pulls).toHaveLength(1);
    expect(ofBranch[0]!.body).toContain('second report');
    expect(ofBranch[0]!.body).toContain('<!-- agent-harness:task:one -->');
    // What a person made of the title stays.
    expect(ofBranch[0]!.title).toBe('WIP: Night one');
  });

  it('opens none for a branch whose pull request a person closed', async () => {
    await pushChange(forge, forge.botToken, 'agent/closed', { 'NOTES.md': 'closed\n' });
    const opened = await forgeActivities.upsertPullRequest({
      ...repo(),
      head: 'agent/closed',
      title: 'To be closed',
      body: 'x',
      draft: false,
      markerKey: 'task:closed',
    });
    expect(opened.pullRequest.draft).toBe(false);
    await forge.api(forge.reviewerToken, 'PATCH', `/repos/${forge.repo.fullName}/pulls/${opened.pullRequest.number}`, {
      state: 'closed',
    });
    const again = await forgeActivities.upsertPullRequest({
      ...repo(),
      head: 'agent/closed',
      title: 'To be closed',
      body: 'y',
      draft: false,
      markerKey: 'task:closed',
    });
    expect(again).toMatchObject({
      outcome: 'closed-before',
      pullRequest: { number: opened.pullRequest.number, state: 'closed' },
    });
  });

  it('refuses to open a pull request for a branch the forge does not have (retryable)', async () => {
    await expect(
      forgeActivities.upsertPullRequest({
        ...repo(),
        head: 'agent/missing',
        title: 't',
        body: 'b',
        draft: true,
        markerKey: 'm',
      }),
    ).rejects.toMatchObject({ type: 'ForgeUnavailable', nonRetryable: false });
  });
});

describe('reviews and comments', () => {
  let number: number;
  beforeAll(async () => {
    await pushChange(forge, forge.botToken, 'agent/review', {
      'lib/title.js': "'use strict';\nmodule.exports = (t) => t;\n",
    });
    number = (
      await forgeActivities.upsertPullRequest({
        ...repo(),
        head: 'agent/review',
        title: 'Review me',
        body: 'r',
        draft: true,
        markerKey: 'task:r',
      })
    ).pullRequest.number;
  });

  it("reads a review, its line comments and conversation comments once, and never the harness's own", async () => {
    const review = await forge.api<{ id: number }>(
      forge.reviewerToken,
      'POST',
      `/repos/${forge.repo.fullName}/pulls/${number}/reviews`,
      {
        event: 'REQUEST_CHANGES',
        body: 'Two things.',
        comments: [{ path: 'lib/title.js', body: 'This should capitalise each word.', new_position: 2 }],
      },
    );
    await forge.api(forge.reviewerToken, 'POST', `/repos/${forge.repo.fullName}/issues/${number}/comments`, {
      body: '/agent also add a test',
    });
    const read = await forgeActivities.readPullRequest({
      ...repo(),
      number,
      handledReviews: [],
      handledComments: [],
      checks: false,
    });
    expect(read.pullRequest).toMatchObject({ number, state: 'open', headRef: 'agent/review' });
    expect(read.reviews).toEqual([
      expect.objectContaining({ id: review.id, author: REVIEWER, state: 'REQUEST_CHANGES', body: 'Two things.' }),
    ]);
    expect(read.reviewComments).toEqual([
      expect.objectContaining({
        author: REVIEWER,
        path: 'lib/title.js',
        line: 2,
        reviewId: review.id,
        body: 'This should capitalise each word.',
      }),
    ]);
    expect(read.issueComments).toEqual([expect.objectContaining({ author: REVIEWER, body: '/agent also add a test' })]);

    const lineComment = read.reviewComments[0]!;
    const reply = {
      ...repo(),
      issue: number,
      body: 'Done in abc123.',
      markerKey: `reply:${lineComment.id}`,
      replyTo: { commentId: lineComment.id, reviewId: review.id },
    };
    const posted = await forgeActivities.postComment(reply);
    expect(posted).toMatchObject({ posted: true, existed: false });
    // A retry after a crash between the forge's answer and the recorded result: the same reply, not a second.
    expect(await forgeActivities.postComment(reply)).toMatchObject({
      posted: true,
      existed: true,
      id: (posted as { id: number }).id,
    });
    const thread = await forge.api<Array<{ body: string }>>(
      forge.reviewerToken,
      'GET',
      `/repos/${forge.repo.fullName}/pulls/${number}/reviews/${review.id}/comments`,
    );
    expect(thread.filter((c) => c.body.includes(`reply:${lineComment.id}`))).toHaveLength(1);

    const handledComments = addIdsToRanges([], [lineComment.id, ...read.issueComments.map((c) => c.id)]);
    const again = await forgeActivities.readPullRequest({
      ...repo(),
      number,
      handledReviews: addIdsToRanges([], [review.id]),
      handledComments,
      checks: false,
    });
    // The harness's reply (a new comment in the thread) is its own: not read back as work.
    expect(again).toMatchObject({ reviews: [], reviewComments: [], issueComments: [] });
  });

  it('writes at most commentsPerHour comments an hour on one pull request', async () => {
    const results = [];
    for (let i = 0; i < 4; i += 1)
      results.push(
        await forgeActivities.postComment({
          ...repo(),
          issue: number,
          body: `note ${i}`,
          markerKey: `note:${i}`,
          onPullRequest: true,
        }),
      );
    // The reply above and two notes fill the three; the next two wait.
    expect(results.map((r) => r.posted)).toEqual([true, true, false, false]);
    expect(results[2]).toMatchObject({ limited: true });
    expect((results[2] as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(3_000_000);
  });
});

describe('checks', () => {
  it("reads the combined state and the end of a failing check's log from an allowed host only", async () => {
    const sha = await pushChange(forge, forge.botToken, 'agent/checks', { 'NOTES.md': 'checks\n' });
    const status = (state: string, context: string, target_url: string) =>
      forge.api(forge.botToken, 'POST', `/repos/${forge.repo.fullName}/statuses/${sha}`, {
        state,
        context,
        target_url,
        description: `${context} ${state}`,
      });
    await status('success', 'ci/lint', `http://${logHost}/logs/1`);
    await status('failure', 'ci/test', `http://${logHost}/logs/42`);
    await status('failure', 'ci/other', 'http://198.51.100.7/logs/1');
    const checks = await forgeActivities.readChecks({ ...repo(), sha });
    expect(checks.state).toBe('failure');
    const byName = Object.fromEntries(checks.checks.map((c) => [c.name, c]));
    expect(byName['ci/lint']).toMatchObject({ state: 'success' });
    expect(byName['ci/test']!.log).toContain('not ok 3 - title capitalises every word');
    expect(Buffer.byteLength(byName['ci/test']!.log!)).toBeLessThan(9 * 1024);
    expect(byName['ci/other']).toMatchObject({
      state: 'failure',
      logUnavailable: "198.51.100.7 is not in the forge's logHosts",
    });
    await status('pending', 'ci/test', `http://${logHost}/logs/43`);
    expect((await forgeActivities.readChecks({ ...repo(), sha })).state).toBe('failure');
    const pull = await forgeActivities.upsertPullRequest({
      ...repo(),
      head: 'agent/checks',
      title: 'c',
      body: 'c',
      draft: true,
      markerKey: 'c',
    });
    expect(await forgeActivities.findPullRequestByHead({ ...repo(), sha })).toEqual({
      number: pull.pullRequest.number,
    });
  });
});

describe('issues, labels, permissions and branches', () => {
  it('reads issues, sets labels, and tells writers from readers', async () => {
    const issue = await forge.api<{ number: number }>(
      forge.readerToken,
      'POST',
      `/repos/${forge.repo.fullName}/issues`,
      {
        title: 'Add a title command',
        body: 'textkit title <text>',
      },
    );
    expect(await forgeActivities.readIssue({ ...repo(), number: issue.number })).toMatchObject({
      title: 'Add a title command',
      author: READER,
      isPull: false,
      state: 'open',
    });
    expect((await forgeActivities.setLabels({ ...repo(), issue: issue.number, add: ['agent'] })).labels).toEqual([
      'agent',
    ]);
    expect((await forgeActivities.setLabels({ ...repo(), issue: issue.number, remove: ['agent'] })).labels).toEqual([]);
    expect(await forgeActivities.userPermission({ ...repo(), user: REVIEWER })).toMatchObject({ permission: 'owner' });
    expect(await forgeActivities.userPermission({ ...repo(), user: READER })).toMatchObject({ permission: 'read' });
    expect(await forgeActivities.userPermission({ ...repo(), user: 'nobody-at-all' })).toMatchObject({
      permission: 'none',
    });
    const allowing = createForgeActivities({
      forges: parseForges(
        JSON.stringify({ [FORGE]: { ...JSON.parse(forge.env.AGENT_FORGES)[FORGE], allowUsers: [READER] } }),
      ),
      secrets: forge.secrets,
    });
    expect(await allowing.userPermission({ ...repo(), user: READER })).toEqual({
      permission: 'write',
      via: 'allowUsers',
    });
  });

  it('knows the default branch and protected branches', async () => {
    expect(await forgeActivities.checkBranch({ ...repo(), branch: 'main' })).toEqual({
      defaultBranch: 'main',
      exists: true,
      protected: false,
    });
    await pushChange(forge, forge.reviewerToken, 'release/1', { 'NOTES.md': 'release\n' });
    await forge.api(forge.admin.token, 'POST', `/repos/${forge.repo.fullName}/branch_protections`, {
      rule_name: 'release/*',
    });
    expect(await forgeActivities.checkBranch({ ...repo(), branch: 'release/1' })).toMatchObject({
      exists: true,
      protected: true,
    });
    expect(await forgeActivities.checkBranch({ ...repo(), branch: 'agent/nothing' })).toMatchObject({
      exists: false,
      protected: false,
    });
  });

  it('polls labelled issues and /agent comments it has not handled', async () => {
    const issue = await forge.api<{ number: number }>(
      forge.reviewerToken,
      'POST',
      `/repos/${forge.repo.fullName}/issues`,
      {
        title: 'Polled',
        body: 'b',
        labels: [],
      },
    );
    await forgeActivities.setLabels({ ...repo(), issue: issue.number, add: ['agent'] });
    const comment = await forge.api<{ id: number }>(
      forge.reviewerToken,
      'POST',
      `/repos/${forge.repo.fullName}/issues/${issue.number}/comments`,
      {
        body: 'please\n/agent make it shout',
      },
    );
    const polled = await forgeActivities.pollRepository({
      ...repo(),
      label: 'agent',
      handledComments: [],
      handledIssues: [],
    });
    expect(polled.labelled).toContainEqual(expect.objectContaining({ issue: issue.number, labels: ['agent'] }));
    expect(polled.commands).toContainEqual({
      issue: issue.number,
      isPull: false,
      commentId: comment.id,
      body: 'please\n/agent make it shout',
      author: REVIEWER,
    });
    const next = await forgeActivities.pollRepository({
      ...repo(),
      label: 'agent',
      handledComments: addIdsToRanges(
        [],
        polled.commands.map((c) => c.commentId),
      ),
      handledIssues: addIdsToRanges(
        [],
        polled.labelled.map((i) => i.issue),
      ),
    });
    expect(next.labelled).toEqual([]);
    expect(next.commands).toEqual([]);
  });
});

describe('settings and credentials', () => {
  it('names the missing forge or secret, and a refused token', async () => {
    await expect(
      forgeActivities.readIssue({ forge: 'elsewhere', repository: forge.repo.fullName, number: 1 }),
    ).rejects.toMatchObject({
      type: 'ForgeNotConfigured',
      message: expect.stringContaining('AGENT_FORGES names local'),
    });
    const wrongToken = createForgeActivities({
      forges: forge.forges,
      secrets: { ...forge.secrets, get: () => 'not-a-token-at-all' },
    });
    await expect(wrongToken.readIssue({ ...repo(), number: 1 })).rejects.toMatchObject({
      type: 'ForgeAuthFailed',
      nonRetryable: true,
    });
    expect(() => parseForges('{"Local": {"kind": "gitea", "url": "http://x", "token": "T"}}')).toThrow(/Local/);
    expect(() => parseForges('{"local": {"kind": "gitlab", "url": "http://x", "token": "T"}}')).toThrow(/local\.kind/);
  });
});
