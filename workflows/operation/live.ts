/**
 * The workflow's side of the operation's live events (`common/live.ts`): one Workflow Stream per
 * operation, created as the run starts (its handlers must exist before any poll arrives) and carried
 * across continue-as-new. The workflow appends tool, approval, reply and end events in memory;
 * the model-step activity publishes text deltas into the same stream. Older turns are truncated
 * away (followers that fall behind resume from what is left; the history has everything).
 */
import { WorkflowStream, type WorkflowStreamState } from '@temporalio/workflow-streams/workflow';
import { LIVE_TOPIC, type LiveEvent } from '../../common/live';

/** Distributes `Omit` over the union, so each event keeps its own fields. */
type WithoutBase<E> = E extends unknown ? Omit<E, 'operationId' | 'turn'> : never;

export interface LiveEvents {
  publish(turn: number, event: WithoutBase<LiveEvent>): void;
  /** Drops what came before the previous turn (called as a turn starts). */
  turnStarted(): void;
  /** Releases parked followers (before continue-as-new and at the end). */
  detach(): void;
  state(): WorkflowStreamState;
}

export function openLiveEvents(operationId: string, prior: WorkflowStreamState | undefined): LiveEvents {
  const stream = new WorkflowStream(prior);
  const topic = stream.topic<LiveEvent>(LIVE_TOPIC);
  let previousTurnStart: number | undefined;
  return {
    publish(turn, event) {
      topic.publish({ ...event, operationId, turn } as LiveEvent);
    },
    turnStarted() {
      const { base_offset, log } = stream.getState();
      if (previousTurnStart !== undefined && previousTurnStart > base_offset) stream.truncate(previousTurnStart);
      previousTurnStart = base_offset + log.length;
    },
    detach: () => stream.detachPollers(),
    state: () => stream.getState(),
  };
}
