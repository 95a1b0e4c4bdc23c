/**
 * Reading an operation's checkpoints from its history (`common/rewind-plan.ts` `readCheckpoints`):
 * a turn's checkpoint recorded by the batch's last tool call (`RunToolInput.checkpoint`) reads like
 * a `checkpointWorkspace` activity's; one that failed there is a failure of that turn; a call that
 * ended without one (it never reached its command) is left out, so the `checkpointWorkspace` the
 * operation ran instead is the turn's.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import {
  CHECKPOINT_ACTIVITY,
  checkpointResult,
  type CheckpointOutcome,
  type CheckpointWorkspaceInput,
} from '../../common/checkpoints';
import type { RunToolInput, ToolOutcome } from '../../common/hands';
import { readCheckpoints } from '../../common/rewind-plan';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const payloads = (value: unknown) => ({ payloads: [defaultPayloadConverter.toPayload(value)] });
// From a plain object: event ids are numbers here, `Long`s in the generated types.
const event = (fields: Record<string, unknown>): HistoryEvent =>
  temporal.api.history.v1.HistoryEvent.fromObject(fields);
const recorded = (commit: string, parent?: string): CheckpointOutcome => ({
  commit,
  ...(parent ? { parent } : {}),
  filesChanged: 1,
  changed: ['a.txt'],
  at: '2026-12-01T00:00:00.000Z',
  ms: 12,
});

class History {
  readonly events: HistoryEvent[] = [];

  schedule(type: string, activityId: string, input: unknown): number {
    const eventId = this.events.length + 1;
    this.events.push(
      event({
        eventId,
        activityTaskScheduledEventAttributes: {
          activityType: { name: type },
          activityId,
          taskQueue: { name: 'hands@host-a' },
          input: payloads(input),
        },
      }),
    );
    return eventId;
  }

  complete(scheduledEventId: number, result: unknown, at?: string): void {
    const ms = at === undefined ? undefined : Date.parse(at);
    this.events.push(
      event({
        eventId: this.events.length + 1,
        ...(ms !== undefined ? { eventTime: { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 } } : {}),
        activityTaskCompletedEventAttributes: { scheduledEventId, result: payloads(result) },
      }),
    );
  }

  fail(scheduledEventId: number, message: string): void {
    this.events.push(
      event({
        eventId: this.events.length + 1,
        activityTaskFailedEventAttributes: { scheduledEventId, failure: { message } },
      }),
    );
  }
}

const call = (toolCallId: string, turn?: number): RunToolInput => ({
  sessionId: 's',
  operationId: 'op',
  toolCallId,
  name: 'bash',
  input: { command: 'true' },
  ...(turn !== undefined ? { checkpoint: { turn, exclude: ['node_modules/'] } } : {}),
});
const ran = (extra: Partial<ToolOutcome> = {}): ToolOutcome => ({
  content: '',
  isError: false,
  synthetic: false,
  ...extra,
});
const own = (turn: number, kind: CheckpointWorkspaceInput['kind']): CheckpointWorkspaceInput => ({
  sessionId: 's',
  operationId: 'op',
  turn,
  kind,
  exclude: ['node_modules/'],
});

describe('readCheckpoints', () => {
  it('reads the checkpoints tool calls recorded beside the activities of their own', () => {
    const h = new History();
    h.complete(h.schedule(CHECKPOINT_ACTIVITY, 'checkpoint-base-0', own(0, 'base')), recorded('a'.repeat(40)));
    // Turn 1: the batch's last call recorded it.
    h.complete(h.schedule('runTool', 'tool-t1', call('t1', 1)), ran({ checkpoint: recorded('b'.repeat(40)) }));
    // Turn 2: a call without a checkpoint (not the last of its batch), then one whose checkpoint failed.
    h.complete(h.schedule('runTool', 'tool-t2a', call('t2a')), ran());
    h.complete(h.schedule('runTool', 'tool-t2b', call('t2b', 2)), ran({ checkpointFailure: 'the disk is full' }));
    // Turn 3: the call ended without its checkpoint; the operation's own activity took it.
    h.complete(h.schedule('runTool', 'tool-t3', call('t3', 3)), ran());
    h.complete(h.schedule(CHECKPOINT_ACTIVITY, 'checkpoint-turn-3', own(3, 'turn')), recorded('c'.repeat(40)));
    // Turn 4: the call failed in the end; so did the checkpoint it would have recorded.
    h.fail(h.schedule('runTool', 'tool-t4', call('t4', 4)), 'SandboxLost');

    const records = readCheckpoints([h.events]);
    expect(
      records.map(({ turn, kind, activityId, outcome, failure }) => ({
        turn,
        kind,
        activityId,
        commit: outcome && 'commit' in outcome ? outcome.commit.slice(0, 1) : undefined,
        failure,
      })),
    ).toEqual([
      { turn: 0, kind: 'base', activityId: 'checkpoint-base-0', commit: 'a', failure: undefined },
      { turn: 1, kind: 'turn', activityId: 'tool-t1', commit: 'b', failure: undefined },
      { turn: 2, kind: 'turn', activityId: 'tool-t2b', commit: undefined, failure: 'the disk is full' },
      { turn: 3, kind: 'turn', activityId: 'checkpoint-turn-3', commit: 'c', failure: undefined },
      { turn: 4, kind: 'turn', activityId: 'tool-t4', commit: undefined, failure: 'SandboxLost' },
    ]);
    expect(records.every((record) => record.taskQueue === 'hands@host-a')).toBe(true);
  });

  it('reads short results in full: an unchanged checkpoint is its commit alone, recorded when its activity completed', () => {
    const [a, b] = ['a'.repeat(40), 'b'.repeat(40)];
    const [at1, at2] = ['2026-12-05T10:00:01.250Z', '2026-12-05T10:00:02.500Z'];
    const older = recorded(a); // a result recorded before short results: every field
    const changed = checkpointResult(recorded(b, a));
    const unchanged = checkpointResult({ commit: b, parent: b, filesChanged: 0, changed: [], at: at1, ms: 0 });
    expect(changed).toEqual({ commit: b, parent: a, filesChanged: 1, changed: ['a.txt'], ms: 12 });
    expect(unchanged).toEqual({ commit: b });
    expect(checkpointResult({ skipped: 'no git', at: at1 })).toEqual({ skipped: 'no git', at: at1 });

    const h = new History();
    h.complete(h.schedule(CHECKPOINT_ACTIVITY, 'checkpoint-base-0', own(0, 'base')), older);
    h.complete(h.schedule('runTool', 'tool-t1', call('t1', 1)), { content: '', checkpoint: changed }, at1);
    h.complete(h.schedule(CHECKPOINT_ACTIVITY, 'checkpoint-turn-2', own(2, 'turn')), unchanged, at2);
    expect(readCheckpoints([h.events]).map((record) => record.outcome)).toEqual([
      older,
      { commit: b, parent: a, filesChanged: 1, changed: ['a.txt'], at: at1, ms: 12 },
      { commit: b, filesChanged: 0, changed: [], at: at2, ms: 0 },
    ]);
  });
});
