/**
 * Nothing lost, nothing twice, on a real Gitea with real worker processes SIGKILLed:
 *  1. while a webhook is in flight — the label's delivery is accepted and the only worker dies; the
 *     delivery sent again is a duplicate; the next worker starts one task, which opens one pull
 *     request and writes one "On it" comment;
 *  2. while the pull request waits — a review arrives with no worker running (it waits in Temporal),
 *     and the next worker is killed in the middle of the round (inside the agent's commit command);
 *     the worker after it finishes the round: one commit on the branch, the command run once, one
 *     reply in the comment's thread, still one pull request.
 */
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { promisify } from 'node:util';
import { volumeNameOf } from '../../common/sandbox-names';
import { testPlatform } from '../support/env';
import { CODING_TASK_WORKFLOW_TYPE } from '../../common/coding-task';
import { issueTaskId, pullRequestLoopId } from '../../common/forge';
import { pullRequestStatusQuery } from '../../common/pull-request';
import { pullRequestScenario } from '../../scripted-model/scenarios/pull-request';
import type { WebhookReceiver } from '../../workers/webhook-receiver';
import { startTaskHarness, taskSessionId, type TaskHarness } from '../support/coding-task';
import {
  FORGE,
  REVIEWER,
  settledTask,
  receiveWebhooks,
  startTestForge,
  WEBHOOK_SECRET,
  type TestForge,
} from '../support/forge';
import { inSandbox } from '../support/hands';
import { waitFor } from '../support/operation-harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

jest.setTimeout(1_800_000);

const execFileAsync = promisify(execFile);

let forge: TestForge;
let h: TaskHarness;
let receiver: WebhookReceiver;
const workers: WorkerProcess[] = [];
const received: string[] = [];
const repo = () => ({ forge: FORGE, repository: forge.repo.fullName });

function startWorker(): WorkerProcess {
  const worker = startWorkerProcess({
    brainQueue: h.brainQueue,
    handsQueue: h.handsQueue,
    modelUrl: h.model.url,
    env: { ...forge.env, AGENT_TASKS_DIR: h.tasksDir },
  });
  workers.push(worker);
  return worker;
}

beforeAll(async () => {
  forge = await startTestForge({
    tasks: { verify: 'npm test', budget: { featuresPerRun: 1, maxAttemptsPerFeature: 2 } },
  });
  h = await startTaskHarness({}, { script: pullRequestScenario({ holdRevision: true }), workers: 'none' });
  receiver = await receiveWebhooks(forge, h, received);
});

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  await receiver?.close();
  await h?.close();
  await forge?.stop();
});

const pulls = () =>
  forge.api<Array<{ number: number; head: { sha: string } }>>(
    forge.reviewerToken,
    'GET',
    `/repos/${forge.repo.fullName}/pulls?state=all`,
  );
const issueComments = (n: number) =>
  forge.api<Array<{ body: string }>>(forge.reviewerToken, 'GET', `/repos/${forge.repo.fullName}/issues/${n}/comments`);

let issue: number;
let number: number;

it('loses no webhook delivered while its worker is killed, and starts its work once', async () => {
  const first = startWorker();
  const created = await forge.api<{ number: number }>(
    forge.reviewerToken,
    'POST',
    `/repos/${forge.repo.fullName}/issues`,
    {
      title: 'Add the slug command',
      body: 'textkit slug <text> prints a URL slug.',
    },
  );
  issue = created.number;
  await forge.api(forge.reviewerToken, 'POST', `/repos/${forge.repo.fullName}/issues/${issue}/labels`, {
    labels: ['agent'],
  });
  const accepted = await waitFor(
    async () => received.find((line) => line.startsWith('webhook: accepted') && line.includes('issue-labelled')),
    'the label delivery',
  );
  await first.kill();
  // The same delivery again (a forge's retry): acknowledged, nothing new.
  const deliveryId = /delivery (\S+) /.exec(accepted)![1]!;
  const body = JSON.stringify({
    action: 'label_updated',
    repository: { full_name: forge.repo.fullName },
    issue: { number: issue, labels: [{ name: 'agent' }] },
    sender: { login: REVIEWER },
  });
  const again = await fetch(`${receiver.url}/webhooks/${FORGE}`, {
    method: 'POST',
    headers: {
      'x-gitea-event': 'issues',
      'x-gitea-delivery': deliveryId,
      'x-gitea-signature': createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex'),
    },
    body,
  });
  expect([200, 202]).toContain(again.status);

  startWorker();
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
    'the task',
  );
  const result = await settledTask(h.temporal.client, taskId);
  expect(result.pullRequest).toMatchObject({ outcome: 'created' });
  number = result.pullRequest!.number!;
  expect(await pulls()).toHaveLength(1);
  expect((await issueComments(issue)).filter((c) => c.body.includes('On it: coding task'))).toHaveLength(1);
  let tasks = 0;
  for await (const _ of h.temporal.client.workflow.list({
    query: `WorkflowType = "${CODING_TASK_WORKFLOW_TYPE}" AND WorkflowId = "${taskId}"`,
  }))
    tasks += 1;
  expect(tasks).toBe(1);
});

it('answers a review that came while no worker ran, through a worker killed in the middle of the round, once', async () => {
  const loop = h.temporal.client.workflow.getHandle(pullRequestLoopId(repo(), number));
  await waitFor(async () => (await loop.query(pullRequestStatusQuery)).state === 'waiting', 'the loop to wait');
  for (const worker of workers) await worker.kill();
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
  await waitFor(
    async () => received.find((line) => line.startsWith('webhook: accepted') && line.includes(': review →')),
    'the review delivery',
  );

  startWorker();
  const roundTask = `${loop.workflowId}.round-1`;
  h.track(roundTask);
  const session = taskSessionId(roundTask);
  await waitFor(
    async () =>
      (await inSandbox(session, 'cat /workspace/.agent/revision-effects.log 2>/dev/null'))?.includes('commit'),
    "the round's commit command",
  );
  for (const worker of workers) await worker.kill();
  await inSandbox(session, 'touch /tmp/release-revision');
  startWorker();

  const status = await waitFor(
    async () => {
      const s = await loop.query(pullRequestStatusQuery);
      return s.rounds.length === 1 && s.state === 'waiting' ? s : undefined;
    },
    'the round to end',
    900_000,
  );
  expect(status.rounds[0]).toMatchObject({ kind: 'review', state: 'completed' });
  // The agent's commit command (a `never` tool call) ran once, the interrupted attempt included.
  const effects = await execFileAsync('docker', [
    'run',
    '--rm',
    '--network',
    'none',
    '-v',
    `${volumeNameOf(session)}:/w`,
    testPlatform().sandboxImage,
    'cat',
    '/w/.agent/revision-effects.log',
  ]);
  expect(effects.stdout).toBe('commit\n');
  const pull = (await pulls())[0]!;
  expect(await pulls()).toHaveLength(1);
  const commits = await forge.api<Array<{ sha: string; commit: { message: string } }>>(
    forge.reviewerToken,
    'GET',
    `/repos/${forge.repo.fullName}/commits?sha=${encodeURIComponent(`agent/issue-${issue}`)}&limit=50`,
  );
  const after = commits.slice(
    0,
    commits.findIndex((c) => c.sha === before),
  );
  expect(after.map((c) => c.commit.message.split('\n')[0])).toEqual([`Address the review of #${number}`]);
  expect(pull.head.sha).toBe(status.rounds[0]!.commit);
  const thread = await forge.api<Array<{ body: string }>>(
    forge.reviewerToken,
    'GET',
    `/repos/${forge.repo.fullName}/pulls/${number}/reviews/${review.id}/comments`,
  );
  expect(thread.filter((c) => c.body.includes('agent-harness:reply:'))).toHaveLength(1);
});
