/**
 * What the loop writes on the pull request: a reply under each comment a round was given (the
 * agent's own words from `.agent/pr-replies.json`, or the harness's when it wrote none), a summary
 * of a fix round, and the notes of the budgets and refusals. Each is keyed: written once, found by
 * its marker when a retry or a replay writes it again. What the hourly bound holds back waits in the
 * carry and goes out when the bound allows.
 */
import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import { revisionCommentRef, type CommentReply, type RevisionComment } from '../../common/coding-task';
import type { ForgeActivities } from '../../common/forge';
import type { PullRequestLoopCarry } from '../../common/pull-request';
import { FORGE_ACTIVITY_OPTIONS } from '../shared/policies';
import type { PrLoop, RoundWork } from './state';

const forge = proxyActivities<ForgeActivities>(FORGE_ACTIVITY_OPTIONS);

type PendingReply = PullRequestLoopCarry['pendingReplies'][number];

/** How a round ended, for its replies. */
export interface RoundOutcome {
  round: number;
  taskId: string;
  state: 'completed' | 'failed' | 'aborted';
  commit?: string;
  failure?: string;
  replies: CommentReply[];
}

/** Writes one comment or reply; one the hourly bound holds back is kept for later. */
export async function postReply(loop: PrLoop, reply: PendingReply): Promise<void> {
  const { carry, settings } = loop;
  if (carry.pendingReplies.some((pending) => pending.key === reply.key)) return;
  try {
    const result = await forge.postComment({
      forge: settings.forge,
      repository: settings.repository,
      issue: settings.number,
      body: reply.body,
      markerKey: reply.key,
      onPullRequest: true,
      ...(reply.replyTo ? { replyTo: reply.replyTo } : {}),
    });
    if (!result.posted) {
      carry.pendingReplies = [...carry.pendingReplies, reply];
      loop.retryRepliesAfterMs = result.retryAfterMs;
    }
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    carry.forgeError = `a comment could not be written: ${err.cause?.message ?? err.message}`;
  }
}

/** Writes what waits for the hourly bound, in order, until the bound holds again. */
export async function flushPendingReplies(loop: PrLoop): Promise<void> {
  const { carry } = loop;
  while (carry.pendingReplies.length > 0) {
    const [next, ...rest] = carry.pendingReplies;
    carry.pendingReplies = rest;
    await postReply(loop, next!);
    if (carry.pendingReplies.includes(next!)) {
      // Held back again: it goes back to the front.
      carry.pendingReplies = [next!, ...carry.pendingReplies.filter((r) => r !== next)];
      return;
    }
  }
}

/** A reply under every comment of the round, and a summary for a fix round. */
export async function postRoundReplies(loop: PrLoop, work: RoundWork, outcome: RoundOutcome): Promise<void> {
  for (const comment of work.comments) {
    const ref = revisionCommentRef(comment);
    const body = replyText(comment, outcome);
    const threaded = comment.kind === 'review-comment' && work.threads[comment.id] !== undefined;
    await postReply(loop, {
      key: `reply:${ref}`,
      body: threaded ? body : `> @${comment.author}: ${quote(comment.body)}\n\n${body}`,
      ...(threaded ? { replyTo: { commentId: comment.id, reviewId: work.threads[comment.id]! } } : {}),
    });
  }
  if (work.kind === 'checks') {
    const body = outcome.commit
      ? `Fix round ${outcome.round} for ${work.trigger}: pushed \`${outcome.commit.slice(0, 12)}\` after the harness's verification passed. The checks run again on it.`
      : `Fix round ${outcome.round} for ${work.trigger} did not produce a verified change: ${firstLine(outcome.failure ?? 'nothing changed')}. It is left to a person.`;
    await postReply(loop, { key: `round:${outcome.round}`, body });
  }
}

function replyText(comment: RevisionComment, outcome: RoundOutcome): string {
  const agent = outcome.replies.find((reply) => reply.ref === revisionCommentRef(comment));
  const commit = outcome.commit ? `\`${outcome.commit.slice(0, 12)}\`` : undefined;
  const footer = `— the agent, round ${outcome.round}${commit ? ` (${commit})` : ''}`;
  if (outcome.failure)
    return `${agent?.reply ? `${agent.reply}\n\n` : ''}The round's work was not accepted, so nothing was pushed for this: ${firstLine(outcome.failure)}\n\n${footer}`;
  if (agent)
    return `${agent.reply}\n\n${agent.addressed ? (commit ? `Changed in ${commit}.` : 'Nothing needed changing.') : 'Not changed.'} ${footer}`;
  return `${commit ? `Changed in ${commit}` : 'No change was made'}; the agent wrote no reply for this comment. ${footer}`;
}

function quote(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

function firstLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim()) ?? text;
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}
