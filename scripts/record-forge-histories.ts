/**
 * The forge fixtures of `npm run fixtures:record`, on a real Gitea (`platform/gitea.ts`; built on
 * first use) through its real webhooks: the `forgeEvent` of an issue labelled `agent`, the coding
 * task it starts (which opens the draft pull request and starts its loop), and the `pullRequestLoop`
 * through one review round and the pull request's closing. All three run when one of them is wanted.
 * The loop is AutoUpgrade under Worker Versioning (`common/versioning.ts`): every change to it must
 * keep this history replaying.
 */
import type { Client } from '@temporalio/client';
import { FORGE_EVENT_WORKFLOW_TYPE, issueTaskId, pullRequestLoopId } from '../common/forge';
import { pullRequestScenario } from '../scripted-model/scenarios/pull-request';

type Record = (name: string, workflowId: string) => Promise<void>;

export const FORGE_FIXTURES = ['forge-event', 'coding-task-pull-request', 'pull-request-loop'];

export async function recordForgeHistories(record: Record, wanted: (name: string) => boolean): Promise<void> {
  if (!FORGE_FIXTURES.some(wanted)) return;
  const { FORGE, receiveWebhooks, settledTask, startTestForge } = await import('../test/support/forge');
  const { startTaskHarness } = await import('../test/support/coding-task');
  const { waitFor } = await import('../test/support/operation-harness');
  const { pullRequestStatusQuery } = await import('../common/pull-request');
  const forge = await startTestForge({
    tasks: { verify: 'npm test', budget: { featuresPerRun: 1, maxAttemptsPerFeature: 2 } },
  });
  const h = await startTaskHarness({}, { script: pullRequestScenario(), forges: forge.forges, secrets: forge.secrets });
  const receiver = await receiveWebhooks(forge, h, []);
  const client = h.temporal.client;
  const repo = { forge: FORGE, repository: forge.repo.fullName };
  const api = <T>(method: string, apiPath: string, body?: unknown) =>
    forge.api<T>(forge.reviewerToken, method, `/repos/${forge.repo.fullName}${apiPath}`, body);
  try {
    const issue = (
      await api<{ number: number }>('POST', '/issues', {
        title: 'Add the slug command',
        body: 'textkit slug <text> prints a URL slug (see SPEC.md).',
      })
    ).number;
    await api('POST', `/issues/${issue}/labels`, { labels: ['agent'] });
    const taskId = issueTaskId(repo, issue);
    h.track(taskId);
    await waitFor(() => exists(client, taskId), 'the task the label starts');
    const task = await settledTask(client, taskId);
    const number = task.pullRequest?.number;
    if (task.state !== 'completed' || number === undefined)
      throw new Error(`the labelled issue's task ended ${task.state} without a pull request`);
    const loop = client.workflow.getHandle(pullRequestLoopId(repo, number));

    await api('POST', `/pulls/${number}/reviews`, {
      event: 'REQUEST_CHANGES',
      body: 'One thing before this goes in.',
      comments: [{ path: 'src/commands/slug.js', body: 'Please say where the regex comes from.', new_position: 1 }],
    });
    const reviewed = await waitFor(async () => {
      const s = await loop.query(pullRequestStatusQuery);
      return s.rounds.length >= 1 && s.state === 'waiting' ? s : undefined;
    }, 'the review round');
    h.track(reviewed.rounds[0]!.taskId);
    await api('PATCH', `/pulls/${number}`, { state: 'closed' });
    await loop.result();

    // The event of the label: the first forgeEvent that started this task.
    let labelled: string | undefined;
    for await (const info of client.workflow.list({
      query: `WorkflowType = '${FORGE_EVENT_WORKFLOW_TYPE}' AND ExecutionStatus = 'Completed'`,
    })) {
      const history = await client.workflow.getHandle(info.workflowId, info.runId).fetchHistory();
      const started = (history.events ?? []).some(
        (e) => e.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId === taskId,
      );
      if (started) labelled = info.workflowId;
    }
    if (!labelled) throw new Error(`no completed ${FORGE_EVENT_WORKFLOW_TYPE} started ${taskId}`);

    await record('forge-event', labelled);
    await record('coding-task-pull-request', taskId);
    await record('pull-request-loop', loop.workflowId);
  } finally {
    await receiver.close();
    await h.close();
    await forge.stop();
  }
}

function exists(client: Client, workflowId: string): Promise<boolean> {
  return client.workflow
    .getHandle(workflowId)
    .describe()
    .then(
      () => true,
      () => false,
    );
}
