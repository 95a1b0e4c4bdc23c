/**
 * The shape of an operation's steps in history (real Temporal, Docker and scripted model): a batch of
 * only `safe` calls is scheduled at once and answered in the model's order, any other batch runs in
 * order; the search-attribute counters are published every 10 turns and at the end, not every turn;
 * and an activity retried after a timeout sends the workflow's next task to the normal queue, not to the sticky queue
 * of the worker that may have died.
 */
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { operationResult } from '../../client/operation-result';
import type { RecordedCheckpoint, ShortCheckpoint } from '../../common/checkpoints';
import type { ToolOutcome } from '../../common/hands';
import { readCheckpoints } from '../../common/rewind-plan';
import { statusQuery } from '../../common/operation';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import { PROJECT_ROOT } from '../../platform/paths';
import { PATCH_FOLDS } from '../../workflows/shared/patches';
import { everyWorkerOptions } from '../../workers/workers';
import { startOperationHarness, waitFor, type OperationHarness } from '../support/operation-harness';
import { containerNameOf } from '../../common/sandbox-names';
import { createTestWorker, uniqueQueue } from '../support/temporal';
import type { FailOnceActivities } from '../support/failover-workflows';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;
const CALCULATOR = path.join(PROJECT_ROOT, 'examples', 'calculator');

/** The workflow task that scheduled each `runTool` activity, by activity id. */
function toolSchedulingTasks(events: HistoryEvent[]): Map<string, string> {
  const tasks = new Map<string, string>();
  for (const event of events) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'runTool')
      tasks.set(scheduled.activityId!, String(scheduled.workflowTaskCompletedEventId));
  }
  return tasks;
}

/** The input of each activity of this type, in the order they were scheduled. */
function activityInputs(events: HistoryEvent[], type: 'runTool' | 'modelStep'): Record<string, unknown>[] {
  return events
    .map((event) => event.activityTaskScheduledEventAttributes)
    .filter((scheduled) => scheduled?.activityType?.name === type)
    .map((scheduled) => defaultPayloadConverter.fromPayload<Record<string, unknown>>(scheduled!.input!.payloads![0]!));
}

/** The result of each completed `runTool` activity, in the order they completed. */
function runToolResults(events: HistoryEvent[]): ToolOutcome[] {
  const runTool = new Set(
    events
      .filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool')
      .map((event) => String(event.eventId)),
  );
  return events
    .map((event) => event.activityTaskCompletedEventAttributes)
    .filter((completed) => completed && runTool.has(String(completed.scheduledEventId)))
    .map((completed) => defaultPayloadConverter.fromPayload<ToolOutcome>(completed!.result!.payloads![0]!));
}

type Message = { content: Array<{ type: string; id?: string; tool_use_id?: string }> };

/** The tool calls of a request's last assistant message and the results of its last message, ids in order. */
function batchOf(body: unknown): { calls: string[]; results: string[] } {
  const messages = (body as { messages: Message[] }).messages;
  return {
    calls: messages
      .at(-2)!
      .content.filter((block) => block.type === 'tool_use')
      .map((block) => block.id!),
    results: messages
      .at(-1)!
      .content.filter((block) => block.type === 'tool_result')
      .map((b) => b.tool_use_id!),
  };
}

describe('the steps of an operation in history', () => {
  let h: OperationHarness;
  beforeAll(async () => {
    h = await startOperationHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('schedules a batch of only safe calls at once and answers it in the model order', async () => {
    h.model.setScript([
      {
        toolCalls: [
          { name: 'read_file', input: { path: 'src/math.js' } },
          { name: 'list_files', input: { path: 'src' } },
          { name: 'grep', input: { pattern: 'values', path: 'src' } },
        ],
      },
      { text: 'read' },
    ]);
    const handle = await h.start({ goal: 'look around', repo: { kind: 'local', path: CALCULATOR } });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');

    const events = (await handle.fetchHistory()).events ?? [];
    const tasks = toolSchedulingTasks(events);
    expect(tasks.size).toBe(3);
    // A helper's budget is its 60 s cap, which the hands give it when the input leaves it out.
    for (const call of activityInputs(events, 'runTool')) expect(call).not.toHaveProperty('timeoutMs');
    expect(new Set(tasks.values()).size).toBe(1); // all three scheduled by the same workflow task

    const answered = h.model.requests.filter((r) => r.status === 200 && r.turnIndex === 1);
    const batch = batchOf(answered.at(-1)!.body);
    expect(batch.calls).toHaveLength(3);
    expect(batch.results).toEqual(batch.calls);
  });

  it('runs a batch with a call that is not safe one call after the other', async () => {
    h.model.setScript([
      {
        toolCalls: [
          { name: 'read_file', input: { path: 'src/math.js' } },
          { name: 'write_file', input: { path: 'NOTES.md', content: 'notes\n' } },
        ],
      },
      { text: 'written' },
    ]);
    const handle = await h.start({ goal: 'read then write', repo: { kind: 'local', path: CALCULATOR } });
    expect((await operationResult(handle)).state).toBe('completed');

    const tasks = [...toolSchedulingTasks((await handle.fetchHistory()).events ?? []).values()];
    expect(tasks).toHaveLength(2);
    expect(tasks[0]).not.toBe(tasks[1]); // the write was scheduled after the read completed
    const batch = batchOf(h.model.requests.filter((r) => r.status === 200 && r.turnIndex === 1).at(-1)!.body);
    expect(batch.results).toEqual(batch.calls);
  });

  it('records in each step only what the activities cannot read elsewhere', async () => {
    const script = [{ toolCalls: [{ name: 'bash', input: { command: 'true' } }] }, { text: 'done' }];

    // An operation in a session of its own: its session id is its workflow id, which the activities
    // read from their own info, as a call's id from its activity id; the default budget, checkpoint
    // excludes, lane and max_tokens are left out too.
    h.model.setScript(script);
    const own = await h.start({ goal: 'one call' });
    expect((await operationResult(own)).state).toBe('completed');
    const ownEvents = (await own.fetchHistory()).events ?? [];
    const [ownCall] = activityInputs(ownEvents, 'runTool');
    expect(Object.keys(ownCall!).sort()).toEqual(['checkpoint', 'input', 'name']);
    expect(ownCall!.checkpoint).toEqual({ turn: 1 });
    const [firstStep] = activityInputs(ownEvents, 'modelStep');
    for (const field of ['operationId', 'lane', 'maxTokens']) expect(firstStep).not.toHaveProperty(field);

    // An operation in a named session: its calls name both; a budget below a helper's cap is given.
    h.model.setScript([{ toolCalls: [{ name: 'read_file', input: { path: 'README.md' } }] }, { text: 'done' }]);
    const sessionId = `step-shape-${own.workflowId.slice(-8)}`;
    const inSession = await h.start({ goal: 'one call', sessionId, toolTimeoutMs: 30_000 });
    expect((await operationResult(inSession)).state).toBe('completed');
    const [sessionCall] = activityInputs((await inSession.fetchHistory()).events ?? [], 'runTool');
    expect(sessionCall).toMatchObject({ sessionId, operationId: inSession.workflowId, timeoutMs: 30_000 });
  });

  it("records a tool call's result without its false flags, and a checkpoint without its empty fields", async () => {
    h.model.setScript([
      { toolCalls: [{ name: 'bash', input: { command: 'echo a > a.txt' } }] },
      { toolCalls: [{ name: 'bash', input: { command: 'true' } }] },
      { text: 'done' },
    ]);
    const handle = await h.start({ goal: 'two calls' });
    expect((await operationResult(handle)).state).toBe('completed');
    const events = (await handle.fetchHistory()).events ?? [];
    const [changed, same] = runToolResults(events);
    for (const result of [changed!, same!]) {
      expect(result).toMatchObject({ content: '(no output)\n[exit code 0]', exitCode: 0 });
      expect(result).not.toHaveProperty('isError');
      expect(result).not.toHaveProperty('synthetic');
      expect(result.checkpoint).not.toHaveProperty('at');
    }
    expect(changed!.checkpoint).toMatchObject({ filesChanged: 1, changed: ['a.txt'] });
    // Nothing changed in turn 2: the probe's answer is the commit alone; a full read (the probe cannot
    // tell within a second of the last one) is a new commit on its parent. Neither writes a zero or an empty list.
    const second = same!.checkpoint as ShortCheckpoint;
    expect(Object.keys(second).filter((key) => !['commit', 'parent', 'ms'].includes(key))).toEqual([]);
    if (second.parent !== undefined) expect(second.parent).not.toBe(second.commit);
    // Read back, every checkpoint is whole again, each at its activity's completion time.
    const read = readCheckpoints([events]).map((record) => record.outcome as RecordedCheckpoint);
    expect(read.map((outcome) => [outcome.filesChanged, outcome.changed])).toEqual([
      [0, []], // before the first change: the empty workspace
      [1, ['a.txt']],
      [0, []],
    ]);
    expect(read.every((outcome) => !Number.isNaN(Date.parse(outcome.at)))).toBe(true);
  });

  it('publishes the counters every 10 turns and at the end, while the status query is live at every turn', async () => {
    const wait = 'while [ ! -f /workspace/release ]; do sleep 0.05; done';
    h.model.setScript([
      ...Array.from({ length: 11 }, (_, turn) => ({
        toolCalls: [{ name: 'bash', input: { command: turn === 5 ? wait : 'true' } }],
      })),
      { text: 'done' },
    ]);
    // The same `true` call turn after turn on purpose: not a loop for the loop detector to stop.
    const handle = await h.start({ goal: 'twelve turns', stuck: { sameCallRepeats: 100 } });
    // Turn 6 waits in its tool call: the status query says 6, the search attribute still 0.
    await waitFor(async () => {
      const status = await handle.query(statusQuery);
      return status.turn === 6 && status.phase === 'tools';
    }, 'turn 6');
    expect((await handle.describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.turns)).toBe(0);
    execFileSync('docker', [
      'exec',
      '-u',
      AGENT_USER,
      containerNameOf(handle.workflowId),
      'touch',
      '/workspace/release',
    ]);
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.turns).toBe(12);

    // The upserts that carry the counters (`patched()` upserts its own `TemporalChangeVersion` too).
    const events = (await handle.fetchHistory()).events ?? [];
    const turnsPublished = events
      .map((event) => event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {})
      .map((fields) => fields[SEARCH_ATTRIBUTES.turns.name])
      .filter((payload) => payload !== undefined)
      .map((payload) => defaultPayloadConverter.fromPayload(payload));
    expect(turnsPublished).toEqual([0, 10, 12]); // start, turn 10, end
    // Every patch this run took (checkpoints, counters, stuck detection, …) is in one marker, the fold's
    // (`workflows/shared/patches.ts`), written first; so is the one upsert of `TemporalChangeVersion`.
    const markers = events
      .filter((event) => event.markerRecordedEventAttributes)
      .map((event) =>
        defaultPayloadConverter.fromPayload(event.markerRecordedEventAttributes!.details!['patch-data']!.payloads![0]!),
      );
    expect(markers).toEqual([{ id: PATCH_FOLDS[0]!.marker, deprecated: false }]);
    expect(events.findIndex((event) => event.markerRecordedEventAttributes)).toBe(4); // after the first workflow task
    const changeVersions = events.filter(
      (event) =>
        event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.['TemporalChangeVersion'],
    );
    expect(changeVersions).toHaveLength(1);
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.turns)).toBe(12);
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.status)).toBe('completed');
    expect((await handle.query(statusQuery)).turn).toBe(12);
  });

  it('sends the workflow task after an attempt that timed out to the normal queue; after an error, to the sticky one', async () => {
    const activities: FailOnceActivities = {
      async failOnce() {
        const { attempt } = Context.current().info;
        if (attempt === 1) throw ApplicationFailure.retryable('the first attempt fails', 'FirstAttempt');
        return attempt;
      },
      async hangOnce() {
        const { attempt } = Context.current().info;
        // The first attempt hangs as a call on a dead worker does, until the server times it out.
        if (attempt === 1) await Context.current().cancelled;
        return attempt;
      },
    };
    /** Where the workflow task after the activity's completion was scheduled. */
    const queueKindAfterRetry = async (
      workflow: 'retriedActivityOnce' | 'timedOutActivityOnce',
      options: object,
    ): Promise<number | null | undefined> => {
      const taskQueue = uniqueQueue('failover');
      const worker = await createTestWorker(h.temporal, { taskQueue, activities, ...options });
      const events = await worker.runUntil(async () => {
        const handle = await h.temporal.client.workflow.start(workflow, {
          taskQueue,
          workflowId: `${taskQueue}-wf`,
        });
        expect(await handle.result()).toBe(2);
        return (await handle.fetchHistory()).events ?? [];
      });
      const completed = events.findIndex((event) => event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED);
      return events[completed + 1]?.workflowTaskScheduledEventAttributes?.taskQueue?.kind;
    };
    const { TASK_QUEUE_KIND_STICKY, TASK_QUEUE_KIND_NORMAL } = temporal.api.enums.v1.TaskQueueKind;
    // A worker without the interceptor keeps the sticky queue either way.
    expect(await queueKindAfterRetry('timedOutActivityOnce', {})).toBe(TASK_QUEUE_KIND_STICKY);
    expect(await queueKindAfterRetry('timedOutActivityOnce', everyWorkerOptions())).toBe(TASK_QUEUE_KIND_NORMAL);
    // An error came from a live worker: the workflow stays on its sticky queue (a reset would send
    // queries through the normal queue until the next workflow task; see activities/failover.ts).
    expect(await queueKindAfterRetry('retriedActivityOnce', everyWorkerOptions())).toBe(TASK_QUEUE_KIND_STICKY);
  });
});
