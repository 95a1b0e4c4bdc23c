/**
 * `forgeEvent`: one event from a forge — a webhook delivery `agent webhook serve` checked, or what
 * a poll found — handled once (its workflow id is the delivery's, or the comment's: starting it
 * again is a no-op, so a redelivery or a second poll does nothing).
 *
 * - An issue labelled with the forge's label → a coding task on `agent/issue-<n>` whose spec is the
 *   issue and whose result is a draft pull request that fixes it (one task per issue), and a comment
 *   on the issue saying so.
 * - `/agent <instructions>` on an issue → a coding task for that comment on the same branch; on a
 *   pull request → the pull request's loop is woken (it reads the comment itself).
 * - A review, a status, a pull request closed or merged → the pull request's loop is woken.
 * Only people who may write to the repository (or the forge's allow-list) start work; anyone else
 * gets one polite comment and nothing starts.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  getExternalWorkflowHandle,
  ParentClosePolicy,
  proxyActivities,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import { CODING_TASK_WORKFLOW_TYPE, type CodingTaskInput } from '../../common/coding-task';
import {
  agentCommand,
  forgeEventInputSchema,
  isAgentBody,
  issueBranch,
  issueTaskId,
  pullRequestLoopId,
  type ForgeActivities,
  type ForgeEventInput,
  type ForgeEventResult,
  type ForgeRepository,
  type IssueInfo,
} from '../../common/forge';
import {
  forgeTaskDefaultsSchema,
  pullRequestWakeSignal,
  WorkflowExecutionAlreadyStartedError,
} from '../../common/pull-request';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import { describeZodError } from '../../common/validation';
import { FORGE_ACTIVITY_OPTIONS } from '../shared/policies';

const forge = proxyActivities<ForgeActivities>(FORGE_ACTIVITY_OPTIONS);

const SPEC_MAX = 100_000;

export async function forgeEvent(rawInput: unknown): Promise<ForgeEventResult> {
  const parsed = forgeEventInputSchema.safeParse(rawInput);
  if (!parsed.success)
    throw ApplicationFailure.nonRetryable(
      `invalid forge event: ${describeZodError(parsed.error, rawInput)}`,
      'InvalidForgeEvent',
    );
  const input = parsed.data;
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.kind, value: 'forge-event' },
    { key: SEARCH_ATTRIBUTES.repo, value: `${input.forge}:${input.repository}` },
  ]);
  const repo = { forge: input.forge, repository: input.repository };
  const { event } = input;
  switch (event.kind) {
    case 'issue-labelled':
      return issueLabelled(repo, input, event);
    case 'comment':
      return commented(repo, event);
    case 'review':
      return wakeLoop(repo, event.pullRequest, `a review by ${event.sender}`);
    case 'pull-request':
      return wakeLoop(repo, event.pullRequest, `the pull request was ${event.action}`);
    case 'status': {
      const { number } = await forge.findPullRequestByHead({ ...repo, sha: event.sha });
      if (number === undefined)
        return { outcome: `ignored: no open pull request has ${event.sha.slice(0, 12)} as its head` };
      return wakeLoop(repo, number, `a status (${event.state}) on its head`);
    }
  }
}

type Labelled = Extract<ForgeEventInput['event'], { kind: 'issue-labelled' }>;
type Commented = Extract<ForgeEventInput['event'], { kind: 'comment' }>;

async function issueLabelled(
  repo: ForgeRepository,
  input: ForgeEventInput,
  event: Labelled,
): Promise<ForgeEventResult> {
  const settings = await forge.forgeTaskSettings({ forge: repo.forge });
  if (!event.labels.includes(settings.label))
    return { outcome: `ignored: the issue does not carry "${settings.label}"` };
  const issue = await forge.readIssue({ ...repo, number: event.issue });
  if (issue.isPull) return { outcome: 'ignored: a pull request, not an issue' };
  if (issue.state !== 'open') return { outcome: 'ignored: the issue is closed' };
  if (!issue.labels.includes(settings.label)) return { outcome: `ignored: "${settings.label}" was removed since` };
  const refusal = await refuseUnlessWriter(repo, event.sender, event.issue, `label:${input.deliveryId}`);
  if (refusal) return refusal;
  const taskId = issueTaskId(repo, event.issue);
  return startTask(repo, issue, settings, { taskId, spec: issueSpec(issue), key: `task:${taskId}` });
}

async function commented(repo: ForgeRepository, event: Commented): Promise<ForgeEventResult> {
  // The harness's own comments (marked, whatever account wrote them) never start anything.
  if (isAgentBody(event.body)) return { outcome: "ignored: the harness's own comment" };
  const command = agentCommand(event.body);
  if (command === undefined) return { outcome: 'ignored: no /agent command' };
  const refusal = await refuseUnlessWriter(repo, event.author, event.issue, `refused:comment-${event.commentId}`);
  if (refusal) return refusal;
  const issue = await forge.readIssue({ ...repo, number: event.issue });
  if (issue.isPull) return wakeLoop(repo, event.issue, `an /agent comment by ${event.author}`, event.commentId);
  if (!command) return { outcome: 'ignored: an /agent command without instructions on an issue' };
  const settings = await forge.forgeTaskSettings({ forge: repo.forge });
  const taskId = `${issueTaskId(repo, event.issue).replace(/^agent-issue-/, 'agent-comment-')}-${event.commentId}`;
  const spec = `${issueSpec(issue)}\n\n## Requested by ${event.author} in a comment\n\n${command}`;
  return startTask(repo, issue, settings, { taskId, spec, key: `task:${taskId}` });
}

/** Starts the coding task (once: its id is taken for good) and says so on the issue. */
async function startTask(
  repo: ForgeRepository,
  issue: IssueInfo,
  settings: Awaited<ReturnType<ForgeActivities['forgeTaskSettings']>>,
  what: { taskId: string; spec: string; key: string },
): Promise<ForgeEventResult> {
  const defaults = forgeTaskDefaultsSchema.safeParse(settings.tasks);
  const input: CodingTaskInput = {
    ...(defaults.success ? defaults.data : {}),
    repo: { kind: 'forge', forge: repo.forge, repository: repo.repository },
    branch: issueBranch(issue.number),
    spec: what.spec.slice(0, SPEC_MAX),
    pullRequest: { issue: issue.number, title: issue.title.slice(0, 200) },
  };
  try {
    await startChild(CODING_TASK_WORKFLOW_TYPE, {
      workflowId: what.taskId,
      taskQueue: workflowInfo().taskQueue,
      args: [input],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      staticSummary: `${repo.repository}#${issue.number}: ${issue.title}`.slice(0, 190),
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    return { outcome: `already started: ${what.taskId}` };
  }
  const link = settings.workflowsUrl
    ? ` ([in the Temporal Web UI](${settings.workflowsUrl}${encodeURIComponent(what.taskId)}))`
    : '';
  await comment(
    repo,
    issue.number,
    what.key,
    `On it: coding task \`${what.taskId}\`${link} works on the branch \`${issueBranch(issue.number)}\`. A draft pull request that fixes this issue will link here when its first run ends.`,
  );
  return { outcome: `started ${what.taskId}` };
}

/** Nothing for people who may not write: one polite comment, nothing started. */
async function refuseUnlessWriter(
  repo: ForgeRepository,
  user: string,
  issue: number,
  key: string,
): Promise<ForgeEventResult | undefined> {
  let permission: string;
  let via = '';
  try {
    ({ permission, via } = await forge.userPermission({ ...repo, user }));
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    return { outcome: `refused: ${user}'s permission could not be read (${err.cause?.message ?? err.message})` };
  }
  if (permission === 'write' || permission === 'admin' || permission === 'owner') return undefined;
  await comment(
    repo,
    issue,
    key,
    `Thank you, @${user}. The agent takes requests only from people who may write to this repository, so nothing was started; someone with write access can ask for it.`,
  );
  return { outcome: `refused: ${user} may ${permission === 'none' ? 'not read or write' : permission} (${via})` };
}

async function comment(repo: ForgeRepository, issue: number, key: string, body: string): Promise<void> {
  try {
    await forge.postComment({
      ...repo,
      issue,
      body,
      markerKey: key.replace(/[^A-Za-z0-9:._#/-]+/g, '-').slice(0, 120),
    });
  } catch (err) {
    // A comment is a courtesy: the work it announces has started (or was refused) either way.
    if (!(err instanceof ActivityFailure)) throw err;
  }
}

/** Wakes the pull request's loop; a pull request the harness does not look after is left alone. */
async function wakeLoop(
  repo: ForgeRepository,
  number: number,
  reason: string,
  commentId?: number,
): Promise<ForgeEventResult> {
  const loopId = pullRequestLoopId(repo, number);
  try {
    await getExternalWorkflowHandle(loopId).signal(pullRequestWakeSignal, { reason });
    return { outcome: `signalled ${loopId}` };
  } catch {
    if (commentId !== undefined)
      await comment(
        repo,
        number,
        `no-loop:comment-${commentId}`,
        'No agent looks after this pull request, so the `/agent` command was not taken up. Label an issue or ask on one to start a task.',
      );
    return { outcome: `ignored: no loop looks after ${repo.repository}#${number}` };
  }
}

function issueSpec(issue: IssueInfo): string {
  return [
    `# ${issue.title}`,
    '',
    issue.body.trim() || '(the issue has no description)',
    '',
    `(issue #${issue.number}: ${issue.url})`,
  ].join('\n');
}
