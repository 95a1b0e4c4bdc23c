/**
 * `pullRequestLoop`: one workflow per pull request the harness opened, for as long as it is open.
 *
 *   read the pull request (reviews, comments, head checks — only what is not handled yet) →
 *   people who may write asked for something? a review round (a `codingTask` with a `revision` on
 *   the branch), replies on each comment, the rounds section of the body updated →
 *   the head's checks failed? a fix round, within `maxFixRounds` →
 *   nothing to do: wait for a webhook's wake, a person's Update, or `pollIntervalMs` → again.
 *
 * It ends when the pull request is merged or closed, or a person ends it (`agent pr end`); a pause
 * stops new rounds until resumed. Everything it has handled is recorded (ids as ranges), so nothing
 * is answered twice — not after a crash, a redelivered webhook, or its own reply arriving as a new
 * comment — and every comment it writes is found by its marker before it is written again.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { ForgeActivities, PullRequestActivity } from '../../common/forge';
import {
  pullRequestControlSchema,
  pullRequestControlUpdate,
  pullRequestLoopInputSchema,
  pullRequestStatusQuery,
  pullRequestWakeSignal,
  type PullRequestLoopCarry,
  type PullRequestLoopResult,
} from '../../common/pull-request';
import { renderRoundsSection } from '../../common/pull-request-body';
import { describeZodError } from '../../common/validation';
import { ZERO_USAGE } from '../../common/model-types';
import { FORGE_ACTIVITY_OPTIONS } from '../shared/policies';
import { planRound } from './plan';
import { flushPendingReplies, postRoundReplies } from './replies';
import { runRound } from './round';
import { displayedState, loopStatus, publishLoop, type PrLoop } from './state';

const forge = proxyActivities<ForgeActivities>(FORGE_ACTIVITY_OPTIONS);

/** Reads between continue-as-new: each is a few events; a day of 5-minute polls is ~300. */
const READS_PER_RUN = 500;

export async function pullRequestLoop(
  rawInput: unknown,
  carried?: PullRequestLoopCarry,
): Promise<PullRequestLoopResult> {
  const parsed = pullRequestLoopInputSchema.safeParse(rawInput);
  if (!parsed.success)
    throw ApplicationFailure.nonRetryable(
      `invalid pull request loop input: ${describeZodError(parsed.error, rawInput)}`,
      'InvalidPullRequestLoopInput',
    );
  const loop: PrLoop = {
    settings: parsed.data,
    id: workflowInfo().workflowId,
    carry: carried ?? newCarry(),
    wake: false,
    reads: 0,
  };
  acceptMessages(loop);
  publishLoop(loop);
  while (!isOver(loop)) {
    loop.wake = false;
    // Paused, it still reads the pull request (a merge or a close ends it), and starts nothing.
    const read = await readForge(loop);
    if (read && read.pullRequest.state !== 'open') {
      loop.carry.state = read.pullRequest.state;
      loop.carry.reason = `the pull request was ${read.pullRequest.state}`;
      break;
    }
    if (read && !loop.carry.paused) {
      await flushPendingReplies(loop);
      const work = await planRound(loop, read);
      if (work && !loop.carry.paused && !isOver(loop)) {
        const round = await runRound(loop, work);
        if (round) await postRoundReplies(loop, work, round);
        await forge.updatePullRequestSection({
          forge: loop.settings.forge,
          repository: loop.settings.repository,
          number: loop.settings.number,
          section: 'rounds',
          markdown: renderRoundsSection(loop.carry.rounds),
        });
        // The round is over once its replies are written and the body shows it.
        if (loop.carry.state === 'working') loop.carry.state = 'waiting';
        publishLoop(loop);
        continue;
      }
    }
    if (workflowInfo().continueAsNewSuggested || loop.reads >= READS_PER_RUN) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof pullRequestLoop>(rawInput, loop.carry);
    }
    publishLoop(loop);
    await condition(() => loop.wake || isOver(loop), nextWaitMs(loop));
  }
  publishLoop(loop);
  await condition(allHandlersFinished);
  return { ...loopStatus(loop), state: endState(loop) };
}

function newCarry(): PullRequestLoopCarry {
  return {
    state: 'waiting',
    writers: {},
    handledReviews: [],
    handledComments: [],
    checkedHeads: [],
    rounds: [],
    fixRoundsUsed: 0,
    reviewRoundsUsed: 0,
    pendingReplies: [],
    usage: { ...ZERO_USAGE },
    costUsd: 0,
    startedAtMs: Date.now(),
  };
}

function isOver(loop: PrLoop): boolean {
  const { state } = loop.carry;
  return state === 'merged' || state === 'closed' || state === 'ended';
}

function endState(loop: PrLoop): PullRequestLoopResult['state'] {
  const { state } = loop.carry;
  return state === 'merged' || state === 'closed' ? state : 'ended';
}

/** The pull request and what is new on it; undefined (the error shown) when the forge cannot be read. */
async function readForge(loop: PrLoop): Promise<PullRequestActivity | undefined> {
  const { settings, carry } = loop;
  loop.reads += 1;
  try {
    const read = await forge.readPullRequest({
      forge: settings.forge,
      repository: settings.repository,
      number: settings.number,
      handledReviews: carry.handledReviews,
      handledComments: carry.handledComments,
      checks: !carry.paused,
      skipCheckHeads: carry.checkedHeads,
    });
    delete carry.forgeError;
    loop.url = read.pullRequest.url;
    carry.head = { sha: read.pullRequest.headSha, checks: read.checks?.state ?? carry.head?.checks ?? 'none' };
    if (read.checks) carry.head.checks = read.checks.state;
    return read;
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    carry.forgeError = err.cause?.message ?? err.message;
    publishLoop(loop);
    return undefined;
  }
}

/** The poll interval, or sooner when a reply waits for the hourly bound to allow it. */
function nextWaitMs(loop: PrLoop): number {
  const poll = loop.settings.pollIntervalMs;
  const retry = loop.carry.pendingReplies.length ? (loop.retryRepliesAfterMs ?? poll) : poll;
  return Math.max(1_000, Math.min(poll, retry));
}

function acceptMessages(loop: PrLoop): void {
  setHandler(pullRequestStatusQuery, () => loopStatus(loop));
  setHandler(pullRequestWakeSignal, () => {
    loop.wake = true;
  });
  setHandler(
    pullRequestControlUpdate,
    (control) => {
      const { carry } = loop;
      if (control.action === 'pause') carry.paused = true;
      if (control.action === 'resume') {
        carry.paused = false;
        loop.wake = true;
      }
      if (control.action === 'end') {
        carry.state = 'ended';
        loop.roundScope?.cancel();
      }
      carry.reason = control.reason?.trim() || `${control.action} requested by a person`;
      publishLoop(loop);
      return { state: displayedState(loop) };
    },
    {
      validator: (raw) => {
        const checked = pullRequestControlSchema.safeParse(raw);
        if (!checked.success) throw new Error(`invalid control: ${describeZodError(checked.error, raw)}`);
        if (isOver(loop)) throw new Error(`the loop has ended (${loop.carry.state})`);
        if (checked.data.action === 'pause' && loop.carry.paused) throw new Error('the loop is already paused');
        if (checked.data.action === 'resume' && !loop.carry.paused) throw new Error('the loop is not paused');
      },
    },
  );
}
