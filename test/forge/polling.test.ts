/**
 * The polling fallback on a real Gitea with no webhook at all: `forgePoller` finds an issue labelled
 * `agent` and an `/agent` comment, starts one task for each (the comment's event has the id a
 * webhook of it would have), and later polls start nothing again.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { FORGE_POLLER_WORKFLOW_TYPE, forgePollerId, forgePollerStatusQuery, issueTaskId } from '../../common/forge';
import { pullRequestScenario } from '../../scripted-model/scenarios/pull-request';
import { startTaskHarness, type TaskHarness } from '../support/coding-task';
import { FORGE, startTestForge, type TestForge } from '../support/forge';
import { waitFor } from '../support/operation-harness';

let forge: TestForge;
let h: TaskHarness;
const repo = () => ({ forge: FORGE, repository: forge.repo.fullName });

beforeAll(async () => {
  forge = await startTestForge({ tasks: { verify: 'npm test', budget: { featuresPerRun: 1 } } });
  h = await startTaskHarness({}, { script: pullRequestScenario(), forges: forge.forges, secrets: forge.secrets });
});

afterAll(async () => {
  await h?.temporal.client.workflow
    .getHandle(forgePollerId(repo()))
    .terminate('test over')
    .catch(() => undefined);
  await h?.close();
  await forge?.stop();
});

const exists = (id: string) =>
  h.temporal.client.workflow
    .getHandle(id)
    .describe()
    .then(
      () => true,
      () => false,
    );

it('starts a task for a labelled issue and for an /agent comment, each once, with no webhook', async () => {
  const labelled = await forge.api<{ number: number }>(
    forge.reviewerToken,
    'POST',
    `/repos/${forge.repo.fullName}/issues`,
    {
      title: 'Add the slug command',
      body: 'textkit slug <text>',
    },
  );
  await forge.api(forge.reviewerToken, 'POST', `/repos/${forge.repo.fullName}/issues/${labelled.number}/labels`, {
    labels: ['agent'],
  });
  const asked = await forge.api<{ number: number }>(
    forge.reviewerToken,
    'POST',
    `/repos/${forge.repo.fullName}/issues`,
    {
      title: 'Add the words command',
      body: 'textkit words <text>',
    },
  );
  const comment = await forge.api<{ id: number }>(
    forge.reviewerToken,
    'POST',
    `/repos/${forge.repo.fullName}/issues/${asked.number}/comments`,
    {
      body: '/agent please do this one too',
    },
  );

  const poller = await h.temporal.client.workflow.start(FORGE_POLLER_WORKFLOW_TYPE, {
    workflowId: forgePollerId(repo()),
    taskQueue: h.brainQueue,
    args: [{ ...repo(), intervalMs: 5_000 }],
  });
  const labelTask = issueTaskId(repo(), labelled.number);
  const commentTask = `${issueTaskId(repo(), asked.number).replace(/^agent-issue-/, 'agent-comment-')}-${comment.id}`;
  h.track(labelTask);
  h.track(commentTask);
  await waitFor(async () => (await exists(labelTask)) && (await exists(commentTask)), 'the two tasks').catch(
    async (err: Error) => {
      // Where it stood, for the failure message: the poller's reads and the events it handed over.
      const status = await poller.query(forgePollerStatusQuery).catch((e: Error) => e.message);
      const events: string[] = [];
      for await (const w of h.temporal.client.workflow.list({
        query: `WorkflowId STARTS_WITH "forge-event-${FORGE}-"`,
      }))
        events.push(`${w.workflowId} ${w.status.name}`);
      throw new Error(`${err.message}; poller: ${JSON.stringify(status)}; events: ${events.join(', ')}`);
    },
  );
  expect(await exists(`forge-event-${FORGE}-comment-${forge.repo.fullName.replace('/', '-')}-${comment.id}`)).toBe(
    true,
  );
  const polled = (await poller.query(forgePollerStatusQuery)).polls;
  await waitFor(async () => (await poller.query(forgePollerStatusQuery)).polls >= polled + 2, 'two more polls');
  const status = await poller.query(forgePollerStatusQuery);
  expect(status.lastError).toBeUndefined();
  for (const issue of [labelled.number, asked.number]) {
    const comments = await forge.api<Array<{ body: string }>>(
      forge.reviewerToken,
      'GET',
      `/repos/${forge.repo.fullName}/issues/${issue}/comments`,
    );
    expect(comments.filter((c) => c.body.includes('On it: coding task'))).toHaveLength(1);
  }
  let tasks = 0;
  const slug = forge.repo.fullName.replace('/', '-');
  const query = `WorkflowType = "codingTask" AND (WorkflowId STARTS_WITH "agent-issue-${FORGE}-${slug}-" OR WorkflowId STARTS_WITH "agent-comment-${FORGE}-${slug}-")`;
  for await (const _ of h.temporal.client.workflow.list({ query })) tasks += 1;
  expect(tasks).toBe(2);
  // Their nights are not this test's subject (one may be over already: a night of one feature is short).
  for (const id of [labelTask, commentTask])
    await h.temporal.client.workflow
      .getHandle(id)
      .terminate('test over')
      .catch((err: Error) => {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      });
});
