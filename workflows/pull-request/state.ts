/**
 * A pull-request loop's state in one object every step receives, and what it shows: the status
 * query, the Web UI's current details and the search attributes (`AgentPr`, `AgentPrState`).
 */
import { setCurrentDetails, upsertSearchAttributes, type CancellationScope } from '@temporalio/workflow';
import { pullRequestLabel } from '../../common/forge';
import { totalTokens } from '../../common/model-types';
import type { RevisionComment } from '../../common/coding-task';
import type {
  PullRequestLoopCarry,
  PullRequestLoopSettings,
  PullRequestLoopState,
  PullRequestLoopStatus,
  PullRequestRound,
} from '../../common/pull-request';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';

/** What one round is asked to do, and what it handles. */
export interface RoundWork {
  kind: PullRequestRound['kind'];
  instructions: string;
  comments: RevisionComment[];
  /** Marked handled once the round is over. */
  reviewIds: number[];
  commentIds: number[];
  /** A line comment's review, for the reply in its thread. */
  threads: Record<number, number>;
  /** A fix round's head commit. */
  head?: string;
  trigger: string;
}

export interface PrLoop {
  readonly settings: PullRequestLoopSettings;
  /** The workflow id (`pr-<forge>-<owner>-<name>-<number>`). */
  readonly id: string;
  readonly carry: PullRequestLoopCarry;
  /** A webhook or a person asked for a read. */
  wake: boolean;
  /** Reads of the forge in this run (continue-as-new after a bound). */
  reads: number;
  url?: string;
  /** The round running now, and its scope (`end` cancels it). */
  current?: { taskId: string; kind: PullRequestRound['kind'] };
  roundScope?: CancellationScope;
  /** When the hourly comment bound lets the next pending reply through. */
  retryRepliesAfterMs?: number;
}

/** What the loop shows as its state: ended states, then paused, then working or waiting. */
export function displayedState(loop: PrLoop): PullRequestLoopState {
  const { state, paused } = loop.carry;
  if (state === 'merged' || state === 'closed' || state === 'ended') return state;
  if (paused) return 'paused';
  return state;
}

export function loopStatus(loop: PrLoop): PullRequestLoopStatus {
  const { carry, settings } = loop;
  return {
    state: displayedState(loop),
    pullRequest: pullRequestLabel(settings, settings.number),
    ...(loop.url ? { url: loop.url } : {}),
    branch: settings.branch,
    rounds: carry.rounds,
    fixRoundsUsed: carry.fixRoundsUsed,
    maxFixRounds: settings.maxFixRounds,
    reviewRoundsUsed: carry.reviewRoundsUsed,
    pendingReplies: carry.pendingReplies.length,
    ...(loop.current ? { current: loop.current } : {}),
    ...(carry.head ? { head: carry.head } : {}),
    costUsd: carry.costUsd,
    ...(carry.reason ? { reason: carry.reason } : {}),
  };
}

/** Search attributes and the Web UI's current details, after every change of state. */
export function publishLoop(loop: PrLoop): void {
  const { carry, settings } = loop;
  const state = displayedState(loop);
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.kind, value: 'pull-request' },
    { key: SEARCH_ATTRIBUTES.repo, value: `${settings.forge}:${settings.repository}` },
    { key: SEARCH_ATTRIBUTES.pullRequest, value: pullRequestLabel(settings, settings.number) },
    { key: SEARCH_ATTRIBUTES.pullRequestState, value: state },
    { key: SEARCH_ATTRIBUTES.tokens, value: totalTokens(carry.usage) },
    { key: SEARCH_ATTRIBUTES.costUsd, value: Math.round(carry.costUsd * 1e6) / 1e6 },
  ]);
  const rounds = carry.rounds.slice(-10);
  setCurrentDetails(
    [
      `**${state}**${carry.reason ? ` — ${carry.reason}` : ''} · ${loop.url ? `[${settings.repository}#${settings.number}](${loop.url})` : `${settings.repository}#${settings.number}`} · branch \`${settings.branch}\``,
      ...(loop.current ? [`working: ${loop.current.kind} round \`${loop.current.taskId}\``] : []),
      ...(carry.forgeError ? [`⚠ the forge could not be read: ${carry.forgeError.slice(0, 300)}`] : []),
      `rounds: ${carry.rounds.length} (review ${carry.reviewRoundsUsed} of ${settings.maxReviewRounds}, fix ${carry.fixRoundsUsed} of ${settings.maxFixRounds}) · head \`${carry.head?.sha.slice(0, 12) ?? '?'}\` checks ${carry.head?.checks ?? 'not read'} · replies waiting: ${carry.pendingReplies.length} · $${carry.costUsd.toFixed(4)}`,
      ...(rounds.length
        ? [
            '| round | for | commit | outcome |\n|---|---|---|---|\n' +
              rounds
                .map(
                  (r) => `| ${r.round} | ${r.kind} | ${r.commit ? `\`${r.commit.slice(0, 12)}\`` : '—'} | ${r.state} |`,
                )
                .join('\n'),
          ]
        : []),
      'pause, resume or end it: `agent pr pause|resume|end ' + loop.id + '`',
    ].join('\n\n'),
  );
}
