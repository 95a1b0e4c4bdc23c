/**
 * `forgePoller`: the fallback for a forge whose webhooks cannot reach the harness (or a receiver
 * that was down: Gitea does not retry a failed delivery). Every `intervalMs` it reads the issues
 * carrying the trigger label and the `/agent` comments since the last read, and hands each to a
 * `forgeEvent` with the id a webhook of the same thing would have (a comment by its id) or one of
 * its own — so what a webhook already handled, and what an earlier poll handled, start nothing.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  ParentClosePolicy,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import {
  addIdsToRanges,
  FORGE_EVENT_WORKFLOW_TYPE,
  forgeEventWorkflowId,
  forgePollerInputSchema,
  forgePollerStatusQuery,
  type ForgeActivities,
  type ForgeEventInput,
  type ForgePollerCarry,
} from '../../common/forge';
import { WorkflowExecutionAlreadyStartedError } from '../../common/pull-request';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import { describeZodError } from '../../common/validation';
import { FORGE_ACTIVITY_OPTIONS } from '../shared/policies';

const forge = proxyActivities<ForgeActivities>(FORGE_ACTIVITY_OPTIONS);

const POLLS_PER_RUN = 200;

export async function forgePoller(rawInput: unknown, carried?: ForgePollerCarry): Promise<void> {
  const parsed = forgePollerInputSchema.safeParse(rawInput);
  if (!parsed.success)
    throw ApplicationFailure.nonRetryable(
      `invalid forge poller input: ${describeZodError(parsed.error, rawInput)}`,
      'InvalidForgePoller',
    );
  const settings = parsed.data;
  const repo = { forge: settings.forge, repository: settings.repository };
  const carry: ForgePollerCarry = carried ?? { handledComments: [], handledIssues: [], polls: 0 };
  setHandler(forgePollerStatusQuery, () => carry);
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.kind, value: 'forge-poller' },
    { key: SEARCH_ATTRIBUTES.repo, value: `${settings.forge}:${settings.repository}` },
  ]);
  for (let polls = 0; polls < POLLS_PER_RUN && !workflowInfo().continueAsNewSuggested; polls += 1) {
    try {
      const { label } = await forge.forgeTaskSettings({ forge: settings.forge });
      const found = await forge.pollRepository({
        ...repo,
        label,
        ...(carry.since ? { since: carry.since } : {}),
        handledComments: carry.handledComments,
        handledIssues: carry.handledIssues,
      });
      for (const issue of found.labelled)
        await handOver({
          ...repo,
          source: 'poll',
          deliveryId: `poll-label-${settings.repository}-${issue.issue}`,
          event: { kind: 'issue-labelled', issue: issue.issue, labels: issue.labels, sender: issue.author },
        });
      for (const command of found.commands)
        await handOver({
          ...repo,
          source: 'poll',
          deliveryId: `poll-comment-${command.commentId}`,
          event: { kind: 'comment', ...command },
        });
      carry.handledIssues = addIdsToRanges(
        carry.handledIssues,
        found.labelled.map((i) => i.issue),
      );
      carry.handledComments = addIdsToRanges(
        carry.handledComments,
        found.commands.map((c) => c.commentId),
      );
      carry.since = found.readAt;
      delete carry.lastError;
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      carry.lastError = err.cause?.message ?? err.message;
    }
    carry.polls += 1;
    await sleep(settings.intervalMs);
  }
  await condition(allHandlersFinished);
  await continueAsNew<typeof forgePoller>(rawInput, carry);
}

async function handOver(input: ForgeEventInput): Promise<void> {
  try {
    await startChild(FORGE_EVENT_WORKFLOW_TYPE, {
      workflowId: forgeEventWorkflowId(input),
      taskQueue: workflowInfo().taskQueue,
      args: [input],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    });
  } catch (err) {
    // Handled already: by a webhook, or by an earlier poll.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}
