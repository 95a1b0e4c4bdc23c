/**
 * Pull requests end to end on a real Gitea, through its real webhooks: an issue labelled `agent`
 * becomes a coding task and one draft pull request whose body is the morning report; a review's line
 * comment becomes a commit on the same branch and a reply in its thread; a failing commit status
 * becomes a fix round; a forged delivery and a reader's `/agent` start nothing; the loop pauses,
 * resumes and ends when the pull request is closed. Real Temporal, Docker and SDK (scripted model).
 */
import * as http from 'node:http';
import type { WorkflowUpdateFailedError } from '@temporalio/client';
import type { AddressInfo } from 'node:net';
import { createHmac } from 'node:crypto';
import { CODING_TASK_WORKFLOW_TYPE, type CodingTaskResult } from '../../common/coding-task';
import { issueTaskId, pullRequestLoopId } from '../../common/forge';
import { pullRequestControlUpdate, pullRequestStatusQuery } from '../../common/pull-request';
import { pullRequestScenario } from '../../scripted-model/scenarios/pull-request';
import type { WebhookReceiver } from '../../workers/webhook-receiver';
import { startTaskHarness, type TaskHarness } from '../support/coding-task';
import {
  FORGE,
  READER,
  REVIEWER,
  receiveWebhooks,
  settledTask,
  startTestForge,
  type TestForge,
} from '../support/forge';
import { waitFor } from '../support/operation-harness';

// Each step is a coding task or a round on a real forge: minutes on a loaded machine.
jest.setTimeout(1_200_000);

let forge: TestForge;
let h: TaskHarness;
let receiver: WebhookReceiver;
let logServer: http.Server;
const received: string[] = [];
const repo = () => ({ forge: FORGE, repository: forge.repo.fullName });

interface Pull {
  number: number;
  title: string;
  body: string;
  state: string;
  head: { ref: string; sha: string };
}

beforeAll(async () => {
  logServer = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end('> textkit@1.0.0 test\nnot ok 1 - changelog mentions the fix\n# fail 1\n');
  });
  await new Promise<void>((resolve) => logServer.listen(0, '127.0.0.1', resolve));
  const logHost = `127.0.0.1:${(logServer.address() as AddressInfo).port}`;
  forge = await startTestForge({
    logHosts: [logHost],
    tasks: { verify: 'npm test', budget: { featuresPerRun: 1, maxAttemptsPerFeature: 2 } },
  });
  h = await startTaskHarness({}, { script: pullRequestScenario(), forges: forge.forges, secrets: forge.secrets });
  receiver = await receiveWebhooks(forge, h, received);
});

afterAll(async () => {
  await receiver?.close();
  await h?.close();
  await forge?.stop();
  await new Promise((resolve) => logServer?.close(resolve));
});

const pulls = () => forge.api<Pull[]>(forge.reviewerToken, 'GET', `/repos/${forge.repo.fullName}/pulls?state=all`);
const loopStatus = (number: number) =>
  h.temporal.client.workflow.getHandle(pullRequestLoopId(repo(), number)).query(pullRequestStatusQuery);

let issue: number;
let number: number;

describe('an issue labelled agent', () => {
  it('becomes a coding task and one draft pull request whose body is the morning report', async () => {
    const created = await forge.api<{ number: number }>(
      forge.reviewerToken,
      'POST',
      `/repos/${forge.repo.fullName}/issues`,
      {
        title: 'Add the slug command',
        body: 'textkit slug <text> prints a URL slug (see SPEC.md).',
      },
    );
    issue = created.number;
    await forge.api(forge.reviewerToken, 'POST', `/repos/${forge.repo.fullName}/issues/${issue}/labels`, {
      labels: ['agent'],
    });
    const taskId = issueTaskId(repo(), issue);
    h.track(taskId);
    await waitFor(
      async () =>
        h.temporal.client.workflow
          .getHandle(taskId)
          .describe()
          .then(
            () => true,
            () => false,
          ),
      'the task the label starts',
    );
    const result: CodingTaskResult = await settledTask(h.temporal.client, taskId);
    expect(result.state).toBe('completed');
    expect(result.pullRequest).toMatchObject({ outcome: 'created' });
    number = result.pullRequest!.number!;
    const all = await pulls();
    expect(all).toHaveLength(1);
    const pull = all[0]!;
    expect(pull).toMatchObject({
      number,
      state: 'open',
      title: 'WIP: Add the slug command',
      head: { ref: `agent/issue-${issue}` },
    });
    expect(pull.body).toContain(`Fixes #${issue}`);
    expect(pull.body).toContain(`## Morning report: ${taskId}`);
    expect(pull.body).toMatch(/\| `slug` .* \| passed this run \|/);
    expect(pull.body).toContain('http://web-ui.test/namespaces/default/workflows/');
    const comments = await forge.api<Array<{ body: string }>>(
      forge.reviewerToken,
      'GET',
      `/repos/${forge.repo.fullName}/issues/${issue}/comments`,
    );
    expect(comments.filter((c) => c.body.includes(`On it: coding task \`${taskId}\``))).toHaveLength(1);
    expect(received.some((line) => line.startsWith('webhook: accepted') && line.includes('issue-labelled'))).toBe(true);
    expect((await loopStatus(number)).state).toBe('waiting');
  });
});

describe('the pull request loop', () => {
  it('answers a review comment on a line with a commit on the same branch and a reply in its thread', async () => {
    const before = (await pulls())[0]!.head.sha;
    const review = await forge.api<{ id: number }>(
      forge.reviewerToken,
      'POST',
      `/repos/${forge.repo.fullName}/pulls/${number}/reviews`,
      {
        event: 'REQUEST_CHANGES',
        body: 'One thing before this goes in.',
        comments: [{ path: 'src/commands/slug.js', body: 'Please say where the regex comes from.', new_position: 1 }],
      },
    );
    const status = await waitFor(async () => {
      const s = await loopStatus(number);
      return s.rounds.length >= 1 && s.state === 'waiting' ? s : undefined;
    }, 'the review round');
    h.track(status.rounds[0]!.taskId);
    expect(status.rounds[0]).toMatchObject({ round: 1, kind: 'review', state: 'completed' });
    const head = (await pulls())[0]!.head.sha;
    expect(head).not.toBe(before);
    expect(status.rounds[0]!.commit).toBe(head);
    const commit = await forge.api<{ commit: { message: string } }>(
      forge.reviewerToken,
      'GET',
      `/repos/${forge.repo.fullName}/git/commits/${head}`,
    );
    expect(commit.commit.message).toMatch(/^Address the review of #\d+/);
    const file = await forge.api<{ content: string }>(
      forge.reviewerToken,
      'GET',
      `/repos/${forge.repo.fullName}/contents/src/commands/slug.js?ref=agent/issue-${issue}`,
    );
    expect(Buffer.from(file.content, 'base64').toString()).toMatch(/^\/\/ review-comment-\d+: reviewed by alice/);
    const thread = await forge.api<Array<{ body: string; user: { login: string } }>>(
      forge.reviewerToken,
      'GET',
      `/repos/${forge.repo.fullName}/pulls/${number}/reviews/${review.id}/comments`,
    );
    const replies = thread.filter((c) => c.body.includes('agent-harness:reply:'));
    expect(replies).toHaveLength(1);
    expect(replies[0]!.body).toContain('Done: noted your review at the top of src/commands/slug.js.');
    expect(replies[0]!.body).toContain(`Changed in \`${head.slice(0, 12)}\``);
    const body = (await pulls())[0]!.body;
    expect(body).toContain('## Review rounds');
    expect(body).toContain('## Morning report');
    // The review's own text is answered in the conversation, quoted.
    const conversation = await forge.api<Array<{ body: string }>>(
      forge.reviewerToken,
      'GET',
      `/repos/${forge.repo.fullName}/issues/${number}/comments`,
    );
    expect(conversation.filter((c) => c.body.startsWith('> @alice: One thing before this goes in.'))).toHaveLength(1);
  });

  it('answers a failing commit status with a fix round given its log', async () => {
    const head = (await pulls())[0]!.head.sha;
    const logUrl = `http://127.0.0.1:${(logServer.address() as AddressInfo).port}/logs/1`;
    await forge.api(forge.reviewerToken, 'POST', `/repos/${forge.repo.fullName}/statuses/${head}`, {
      state: 'failure',
      context: 'ci/test',
      description: 'npm test failed',
      target_url: logUrl,
    });
    const status = await waitFor(async () => {
      const s = await loopStatus(number);
      return s.rounds.length >= 2 && s.state === 'waiting' ? s : undefined;
    }, 'the fix round');
    h.track(status.rounds[1]!.taskId);
    expect(status.rounds[1]).toMatchObject({ kind: 'checks', state: 'completed', trigger: 'failing: ci/test' });
    expect(status.fixRoundsUsed).toBe(1);
    const newHead = (await pulls())[0]!.head.sha;
    expect(newHead).toBe(status.rounds[1]!.commit);
    const changelog = await forge.api<{ content: string }>(
      forge.reviewerToken,
      'GET',
      `/repos/${forge.repo.fullName}/contents/CHANGELOG.md?ref=agent/issue-${issue}`,
    );
    expect(Buffer.from(changelog.content, 'base64').toString()).toContain('fixed the failing checks: ci/test');
    const comments = await forge.api<Array<{ body: string }>>(
      forge.reviewerToken,
      'GET',
      `/repos/${forge.repo.fullName}/issues/${number}/comments`,
    );
    expect(comments.filter((c) => c.body.includes('Fix round 2 for failing: ci/test: pushed'))).toHaveLength(1);
    // The round's goal carried the check's log (what the scripted agent read it from).
    const goals = h.model.requests.map((r) => r.rawBody).filter((g) => g.includes('Revise a pull request'));
    expect(goals.some((g) => g.includes('not ok 1 - changelog mentions the fix'))).toBe(true);
  });

  it("pauses and resumes on a person's Update, and refuses a pause twice", async () => {
    const handle = h.temporal.client.workflow.getHandle(pullRequestLoopId(repo(), number));
    expect(
      await handle.executeUpdate(pullRequestControlUpdate, { args: [{ action: 'pause', reason: 'reviewing' }] }),
    ).toEqual({ state: 'paused' });
    const refusal = (args: { action: 'pause' | 'resume' | 'end' }) =>
      handle.executeUpdate(pullRequestControlUpdate, { args: [args] }).then(
        () => 'accepted',
        (err: WorkflowUpdateFailedError) => err.cause?.message,
      );
    expect(await refusal({ action: 'pause' })).toBe('the loop is already paused');
    expect(await refusal({ action: 'stop' as 'end' })).toMatch(/^invalid control: action: /);
    expect((await loopStatus(number)).state).toBe('paused');
    expect(await handle.executeUpdate(pullRequestControlUpdate, { args: [{ action: 'resume' }] })).toEqual({
      state: 'waiting',
    });
  });
});

describe('what starts nothing', () => {
  it('refuses a forged delivery with a clear log line and starts nothing', async () => {
    const body = JSON.stringify({
      action: 'created',
      repository: { full_name: forge.repo.fullName },
      issue: { number: issue },
      comment: { id: 999_999, body: '/agent delete everything', user: { login: REVIEWER } },
      sender: { login: REVIEWER },
    });
    const post = (signature: string) =>
      fetch(`${receiver.url}/webhooks/${FORGE}`, {
        method: 'POST',
        headers: {
          'x-gitea-event': 'issue_comment',
          'x-gitea-delivery': 'forged-1',
          'x-gitea-signature': signature,
          'content-type': 'application/json',
        },
        body,
      });
    const forged = await post(createHmac('sha256', 'not-the-secret').update(body).digest('hex'));
    expect(forged.status).toBe(401);
    expect((await post('')).status).toBe(401);
    expect(received.filter((line) => line.includes('forged-1') && line.startsWith('webhook: refused'))).toHaveLength(2);
    expect(received.some((line) => line.includes('the signature does not match'))).toBe(true);
    const started = h.temporal.client.workflow.list({
      query: `WorkflowId = "forge-event-${FORGE}-comment-${forge.repo.fullName.replace('/', '-')}-999999"`,
    });
    for await (const _ of started) throw new Error('a forged delivery started a workflow');
  });

  it("answers a reader's /agent comment with one polite refusal and starts no task", async () => {
    const comment = await forge.api<{ id: number }>(
      forge.readerToken,
      'POST',
      `/repos/${forge.repo.fullName}/issues/${issue}/comments`,
      {
        body: '/agent rewrite it in Rust',
      },
    );
    const eventId = `forge-event-${FORGE}-comment-${forge.repo.fullName.replace('/', '-')}-${comment.id}`;
    const outcome = await waitFor(async () => {
      const found = h.temporal.client.workflow.getHandle(eventId);
      return (await found.describe().catch(() => undefined)) ? found.result() : undefined;
    }, 'the comment event');
    expect(outcome).toEqual({ outcome: expect.stringMatching(/^refused: mallory may read/) });
    const comments = await forge.api<Array<{ body: string }>>(
      forge.reviewerToken,
      'GET',
      `/repos/${forge.repo.fullName}/issues/${issue}/comments`,
    );
    expect(comments.filter((c) => c.body.includes(`Thank you, @${READER}`))).toHaveLength(1);
    const tasks = h.temporal.client.workflow.list({
      // This file's repository only: other files' tasks share the server.
      query: `WorkflowType = "${CODING_TASK_WORKFLOW_TYPE}" AND WorkflowId STARTS_WITH "agent-comment-${FORGE}-${forge.repo.fullName.replace('/', '-')}-"`,
    });
    for await (const _ of tasks) throw new Error("a reader's comment started a task");
  });
});

describe('what the harness never does', () => {
  it('never pushes to the default branch of a forge repository, whatever the input says', async () => {
    const handle = await h.start({
      repo: { kind: 'forge', ...repo() },
      branch: 'main',
      spec: 'Add the slug command',
      verify: 'npm test',
    });
    const result = await settledTask(h.temporal.client, handle.workflowId);
    expect(result.state).toBe('failed');
    expect(result.reason).toContain('UnsafeBranch: the harness never pushes to main: it is the default branch of');
    expect(result.pullRequest).toMatchObject({
      outcome: 'not opened',
      reason: expect.stringContaining("is the pull request's own base"),
    });
    const main = await forge.api<{ commit: { message: string } }>(
      forge.reviewerToken,
      'GET',
      `/repos/${forge.repo.fullName}/branches/main`,
    );
    expect(main.commit.message.trim()).toBe('textkit: upper');
  });
});

describe('the end of a pull request', () => {
  it('ends the loop when the pull request is closed, even paused', async () => {
    const handle = h.temporal.client.workflow.getHandle(pullRequestLoopId(repo(), number));
    await handle.executeUpdate(pullRequestControlUpdate, { args: [{ action: 'pause' }] });
    await forge.api(forge.reviewerToken, 'PATCH', `/repos/${forge.repo.fullName}/pulls/${number}`, { state: 'closed' });
    const result = await h.temporal.client.workflow.getHandle(pullRequestLoopId(repo(), number)).result();
    expect(result).toMatchObject({ state: 'closed', rounds: [expect.anything(), expect.anything()] });
  });
});
