/**
 * The pull-request loop contract: one workflow per pull request the harness opened
 * (`pullRequestLoop`, id `pullRequestLoopId`), which waits — durably, for days — for reviews, review
 * comments, `/agent` comments and failing checks, answers each with a review round (a coding task
 * with a `revision` on the same branch), replies on the comments, and ends when the pull request is
 * merged or closed or a person ends it. A webhook (`forgeEvent`) wakes it at once; without one it
 * reads the pull request every `pollIntervalMs`.
 *
 * Deterministic (imported by workflow code): zod, Temporal definitions and types only.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
/** What starting a workflow whose id is taken throws (workflow code sees `@temporalio/common` only through here). */
export { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { z } from 'zod';
import { codingTaskFields, type CommentReply } from './coding-task';
import { forgeNameSchema, repositoryNameSchema, type CheckState, type IdRanges } from './forge';
import type { TokenUsage } from './model-types';
import { PR_REPLIES_FILE_PATH } from './task-prompts';

export const PULL_REQUEST_LOOP_WORKFLOW_TYPE = 'pullRequestLoop';

/**
 * What the coding tasks and review rounds a forge starts run with (the forge's `tasks` in
 * `AGENT_FORGES`, or the task that opened the pull request): the coding task's own fields.
 */
export const forgeTaskDefaultsSchema = z
  .strictObject(codingTaskFields)
  .pick({
    verify: true,
    verifyTimeoutMs: true,
    budget: true,
    model: true,
    handsTaskQueue: true,
    egress: true,
    environment: true,
    hooks: true,
    stuck: true,
  })
  .partial();
export type ForgeTaskDefaults = z.input<typeof forgeTaskDefaultsSchema>;

export const pullRequestLoopInputSchema = z.strictObject({
  forge: forgeNameSchema,
  repository: repositoryNameSchema,
  number: z.int().positive(),
  /** The pull request's head branch: the branch every round works on. */
  branch: z.string().min(1).max(200),
  /** What review rounds run with. */
  task: forgeTaskDefaultsSchema.default({}),
  /** Rounds on failing checks, in all (0: checks are only reported). */
  maxFixRounds: z.int().min(0).max(100).default(3),
  /** Review rounds in all (a bound on what one pull request can cost). */
  maxReviewRounds: z.int().min(0).max(1_000).default(20),
  /** How often the pull request is read when no webhook wakes the loop. */
  pollIntervalMs: z.int().min(1_000).max(86_400_000).default(300_000),
});
export type PullRequestLoopInput = z.input<typeof pullRequestLoopInputSchema>;
export type PullRequestLoopSettings = z.output<typeof pullRequestLoopInputSchema>;

export type PullRequestLoopState = 'waiting' | 'working' | 'paused' | 'merged' | 'closed' | 'ended';

/** One round the loop ran. */
export interface PullRequestRound {
  /** 1-based. */
  round: number;
  kind: 'review' | 'checks' | 'command';
  taskId: string;
  /** What started it: review and comment ids, or the failing check names. */
  trigger: string;
  state: 'completed' | 'failed' | 'aborted';
  commit?: string;
  replies: number;
  costUsd: number;
  reason: string;
}

/** What survives continue-as-new (field names are part of recorded histories: keep them). */
export interface PullRequestLoopCarry {
  /** `waiting`, `working`, or how it ended (`paused` is the flag below). */
  state: PullRequestLoopState;
  /** A person paused it: no new round starts until they resume it. */
  paused?: boolean;
  /** What the forge says of each author who asked for work: may they write? */
  writers: Record<string, boolean>;
  /** Reviews and comments answered (or left alone on purpose): never answered twice. */
  handledReviews: IdRanges;
  handledComments: IdRanges;
  /** Head commits whose failing checks had their round (or were given up on). */
  checkedHeads: string[];
  rounds: PullRequestRound[];
  fixRoundsUsed: number;
  reviewRoundsUsed: number;
  /** Comments the loop could not write yet (the hourly bound), written when it allows. */
  pendingReplies: Array<{ key: string; body: string; replyTo?: { commentId: number; reviewId: number } }>;
  usage: TokenUsage;
  costUsd: number;
  /** Why a person paused or ended it. */
  reason?: string;
  /** The head commit and its checks as last read. */
  head?: { sha: string; checks: CheckState };
  /** The last time reading the forge failed, and why (cleared by the next read). */
  forgeError?: string;
  startedAtMs: number;
}

export interface PullRequestLoopStatus {
  state: PullRequestLoopState;
  pullRequest: string;
  url?: string;
  branch: string;
  rounds: PullRequestRound[];
  fixRoundsUsed: number;
  maxFixRounds: number;
  reviewRoundsUsed: number;
  pendingReplies: number;
  /** The round running now. */
  current?: { taskId: string; kind: PullRequestRound['kind'] };
  head?: { sha: string; checks: CheckState };
  costUsd: number;
  reason?: string;
}

export interface PullRequestLoopResult extends PullRequestLoopStatus {
  state: Exclude<PullRequestLoopState, 'waiting' | 'working' | 'paused'>;
}

export const pullRequestStatusQuery = defineQuery<PullRequestLoopStatus>('pullRequestStatus');

/** Wakes the loop now (a webhook said something happened; the loop reads the forge itself). */
export const pullRequestWakeSignal = defineSignal<[{ reason: string }]>('pullRequestWake');

export const pullRequestControlSchema = z.strictObject({
  action: z.enum(['pause', 'resume', 'end']),
  reason: z.string().trim().max(2_000).optional(),
});
export type PullRequestControl = z.output<typeof pullRequestControlSchema>;

/** `agent pr pause|resume|end`: accepted once it is in the history; the answer is the loop's state after it. */
export const pullRequestControlUpdate = defineUpdate<{ state: PullRequestLoopState }, [PullRequestControl]>(
  'pullRequestControl',
);

/** The file a review round's agent writes its per-comment replies to. */
export const PR_REPLIES_FILE = PR_REPLIES_FILE_PATH;

export const prRepliesSchema = z.array(
  z.strictObject({
    ref: z.string().min(1).max(100),
    addressed: z.boolean(),
    reply: z.string().trim().min(1).max(10_000),
  }),
);

/** The replies of `.agent/pr-replies.json` for the comments `refs` names, or why the file is unusable. */
export function parsePrReplies(
  text: string | undefined,
  refs: readonly string[],
): { replies: CommentReply[]; problem?: string } {
  if (text === undefined) return { replies: [], problem: `${PR_REPLIES_FILE} was not written` };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { replies: [], problem: `${PR_REPLIES_FILE} is not JSON: ${(err as Error).message}` };
  }
  const parsed = prRepliesSchema.safeParse(json);
  if (!parsed.success)
    return { replies: [], problem: `${PR_REPLIES_FILE} is malformed: ${parsed.error.issues[0]?.message}` };
  const wanted = new Set(refs);
  const seen = new Set<string>();
  const replies = parsed.data.filter((entry) => {
    if (!wanted.has(entry.ref) || seen.has(entry.ref)) return false;
    seen.add(entry.ref);
    return true;
  });
  return { replies };
}
