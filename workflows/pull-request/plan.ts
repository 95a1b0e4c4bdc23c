/**
 * What the loop does with what it read: which comments ask for work (from people who may write to
 * the repository), which are only noted (approvals, conversation without an `/agent` command, a
 * reader's requests — answered once with a polite refusal), and whether the head's failing checks
 * get a fix round. Everything looked at is marked handled here or when its round ends.
 */
import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { RevisionComment } from '../../common/coding-task';
import {
  addIdsToRanges,
  agentCommand,
  type CommitChecks,
  type ForgeActivities,
  type PullRequestActivity,
} from '../../common/forge';
import { FORGE_ACTIVITY_OPTIONS } from '../shared/policies';
import { postReply } from './replies';
import type { PrLoop, RoundWork } from './state';

const forge = proxyActivities<ForgeActivities>(FORGE_ACTIVITY_OPTIONS);

const LOG_IN_GOAL = 6_000;

export async function planRound(loop: PrLoop, read: PullRequestActivity): Promise<RoundWork | undefined> {
  const work = await reviewWork(loop, read);
  if (work) return work;
  return read.checks ? checksWork(loop, read.checks) : undefined;
}

/** Review comments, review bodies and `/agent` comments by writers: one round for all of them. */
async function reviewWork(loop: PrLoop, read: PullRequestActivity): Promise<RoundWork | undefined> {
  const { carry, settings } = loop;
  const comments: RevisionComment[] = [];
  const reviewIds: number[] = [];
  const commentIds: number[] = [];
  const threads: Record<number, number> = {};
  const noted = { reviews: [] as number[], comments: [] as number[] };
  const refused = new Set<string>();
  const ask = async (author: string, what: () => void, skip: () => void) => {
    if (await mayWrite(loop, author)) what();
    else {
      refused.add(author);
      skip();
    }
  };
  for (const review of read.reviews) {
    const asks = review.body.trim() !== '' && (review.state === 'REQUEST_CHANGES' || review.state === 'COMMENT');
    if (!asks) {
      noted.reviews.push(review.id);
      continue;
    }
    await ask(
      review.author,
      () => {
        reviewIds.push(review.id);
        comments.push({ id: review.id, kind: 'review', author: review.author, body: review.body.slice(0, 20_000) });
      },
      () => noted.reviews.push(review.id),
    );
  }
  for (const comment of read.reviewComments) {
    await ask(
      comment.author,
      () => {
        commentIds.push(comment.id);
        threads[comment.id] = comment.reviewId;
        comments.push({
          id: comment.id,
          kind: 'review-comment',
          author: comment.author,
          body: comment.body.slice(0, 20_000),
          path: comment.path,
          line: comment.line,
          ...(comment.diffHunk ? { diffHunk: comment.diffHunk.slice(-4_000) } : {}),
        });
      },
      () => noted.comments.push(comment.id),
    );
  }
  for (const comment of read.issueComments) {
    const command = agentCommand(comment.body);
    if (command === undefined) {
      noted.comments.push(comment.id);
      continue;
    }
    await ask(
      comment.author,
      () => {
        commentIds.push(comment.id);
        comments.push({ id: comment.id, kind: 'comment', author: comment.author, body: command || comment.body });
      },
      () => noted.comments.push(comment.id),
    );
  }
  carry.handledReviews = addIdsToRanges(carry.handledReviews, noted.reviews);
  carry.handledComments = addIdsToRanges(carry.handledComments, noted.comments);
  for (const author of refused) await refuse(loop, author);
  if (comments.length === 0) return undefined;
  if (carry.reviewRoundsUsed >= settings.maxReviewRounds) {
    carry.handledReviews = addIdsToRanges(carry.handledReviews, reviewIds);
    carry.handledComments = addIdsToRanges(carry.handledComments, commentIds);
    await postReply(loop, {
      key: `review-budget:${carry.reviewRoundsUsed}`,
      body: `The agent has spent this pull request's ${settings.maxReviewRounds} review rounds, so it did not take up the latest comments. A person can take it from here.`,
    });
    return undefined;
  }
  const authors = [...new Set(comments.map((c) => c.author))];
  const onlyCommands = comments.every((c) => c.kind === 'comment');
  return {
    kind: onlyCommands ? 'command' : 'review',
    instructions: onlyCommands
      ? `${authors.join(', ')} asked for the change${comments.length > 1 ? 's' : ''} below in ${comments.length > 1 ? '`/agent` comments' : 'an `/agent` comment'} on the pull request.`
      : `${authors.join(', ')} reviewed the pull request. Address each comment below: change the code where it is right; where you disagree or cannot, say why in your reply.`,
    comments,
    reviewIds,
    commentIds,
    threads,
    trigger: `${comments.length} comment${comments.length === 1 ? '' : 's'} by ${authors.join(', ')}`,
  };
}

/** A fix round for the head's failing checks, once per head and within the budget. */
async function checksWork(loop: PrLoop, checks: CommitChecks): Promise<RoundWork | undefined> {
  const { carry, settings } = loop;
  if (checks.state !== 'failure' && checks.state !== 'error') return undefined;
  if (carry.checkedHeads.includes(checks.sha)) return undefined;
  const failing = checks.checks.filter((check) => check.state === 'failure' || check.state === 'error');
  if (carry.fixRoundsUsed >= settings.maxFixRounds) {
    carry.checkedHeads = [...carry.checkedHeads, checks.sha].slice(-200);
    await postReply(loop, {
      key: `fix-budget:${checks.sha.slice(0, 12)}`,
      body: `Checks failed on \`${checks.sha.slice(0, 12)}\` (${failing.map((c) => c.name).join(', ')}), and the agent has spent this pull request's ${settings.maxFixRounds} fix rounds: it leaves them to a person.`,
    });
    return undefined;
  }
  const sections = failing.map((check) =>
    [
      `### ${check.name}: ${check.state}${check.description ? ` — ${check.description}` : ''}`,
      ...(check.targetUrl ? [`details: ${check.targetUrl}`] : []),
      '',
      check.log
        ? ['```', check.log.slice(-LOG_IN_GOAL).replace(/```/g, "'''"), '```'].join('\n')
        : `(its log could not be read: ${check.logUnavailable ?? 'no link to it'})`,
    ].join('\n'),
  );
  return {
    kind: 'checks',
    instructions: [
      `These checks failed on the head commit \`${checks.sha.slice(0, 12)}\` of the pull request. Find the cause and fix it; do not weaken, skip or delete a check or a test to make it pass.`,
      '',
      ...sections,
    ].join('\n'),
    comments: [],
    reviewIds: [],
    commentIds: [],
    threads: {},
    head: checks.sha,
    trigger: `failing: ${failing.map((c) => c.name).join(', ')}`,
  };
}

/** Whether `author` may ask for work: the forge's answer (or the allow-list), asked once per author. */
async function mayWrite(loop: PrLoop, author: string): Promise<boolean> {
  const { carry, settings } = loop;
  const known = carry.writers[author];
  if (known !== undefined) return known;
  let writes = false;
  try {
    const { permission } = await forge.userPermission({
      forge: settings.forge,
      repository: settings.repository,
      user: author,
    });
    writes = permission === 'write' || permission === 'admin' || permission === 'owner';
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    // Refused or unreadable: the safe answer is no; the reason shows in the loop's details.
    carry.forgeError = `could not read ${author}'s permission: ${err.cause?.message ?? err.message}`;
  }
  carry.writers = { ...carry.writers, [author]: writes };
  return writes;
}

async function refuse(loop: PrLoop, author: string): Promise<void> {
  await postReply(loop, {
    key: `refused:${author.replace(/[^A-Za-z0-9._-]+/g, '-')}`,
    body: `Thank you, @${author}. The agent takes requests only from people who may write to this repository, so it did not act on yours; someone with write access can ask for it.`,
  });
}
