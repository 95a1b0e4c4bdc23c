/**
 * Reading an operation's checkpoints and a rewind's plan from its history (every run, oldest first):
 * pure functions over history events, used by the brain's `planRewind` activity and by `agent
 * checkpoints`. What a rewind to turn N takes (`common/rewind.ts`):
 *
 *  - the conversation: the context after turn N's model step (its fingerprint: the step's base,
 *    its tail and reply, its clear batch), and the answers to the reply's tool calls — the
 *    `tool_result` blocks the next request carried, or the operation's open results when it ended
 *    after that batch;
 *  - the workspace: the latest checkpoint at or before turn N (a turn without one changed nothing),
 *    or the operation's `base` checkpoint when its first change came later; a checkpoint that failed
 *    or is still running in between makes the turn unrecoverable, and says so.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import {
  CHECKPOINT_ACTIVITY,
  checkpointOutcome,
  isSkipped,
  type CheckpointKind,
  type CheckpointOutcome,
  type CheckpointResult,
  type CheckpointWorkspaceInput,
  type RecordedCheckpoint,
} from './checkpoints';
import type { HandsActivities, RunToolInput, ToolCallCheckpoint, ToolOutcome } from './hands';
import type { LaneContinuation } from './lanes';
import type { ModelStepResult } from './model-step';
import { promptTokens, type ToolResultBlockParam } from './model-types';
import { parseOperationInput, type OperationResult, type OperationSettings } from './operation';
import { eventTimeMs, readRecordedRun, type RecordedStep } from './recorded-steps';
import { REWIND_FAILURE_TYPES, type PlanRewindInput, type RewindPlan } from './rewind';
import { sessionIdFor } from './sandbox-names';
import type { OperationDefaults } from './session';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const RUN_TOOL_ACTIVITY: keyof HandsActivities = 'runTool';
type Payloads = temporal.api.common.v1.IPayloads | null | undefined;

/** One checkpoint activity of the operation, as its history records it. */
export interface CheckpointRecord {
  turn: number;
  kind: CheckpointKind;
  activityId: string;
  /** The hands host queue it ran on. */
  taskQueue: string;
  /** Its result; absent while it runs, or when it failed. */
  outcome?: CheckpointOutcome;
  /** Why it failed in the end. */
  failure?: string;
}

export type RecordedCheckpointRecord = CheckpointRecord & { outcome: RecordedCheckpoint };

const decode = <T>(payloads: Payloads, index = 0): T | undefined => {
  const payload = payloads?.payloads?.[index];
  return payload ? defaultPayloadConverter.fromPayload<T>(payload) : undefined;
};

/**
 * The operation's checkpoints in the order they were scheduled: its `checkpointWorkspace` activities,
 * and the tool calls that recorded their turn's checkpoint (`RunToolInput.checkpoint`). A call that
 * ended without one — it never reached its command — is left out: the operation then ran a
 * `checkpointWorkspace` of its own.
 */
export function readCheckpoints(runs: readonly (readonly HistoryEvent[])[]): CheckpointRecord[] {
  const records: CheckpointRecord[] = [];
  const withoutOne = new Set<CheckpointRecord>();
  for (const events of runs) {
    const byScheduledId = new Map<string, { record: CheckpointRecord; ofCall: boolean }>();
    for (const event of events) {
      const scheduled = event.activityTaskScheduledEventAttributes;
      const type = scheduled?.activityType?.name;
      if (scheduled && (type === CHECKPOINT_ACTIVITY || type === RUN_TOOL_ACTIVITY)) {
        const ofCall = type === RUN_TOOL_ACTIVITY;
        const input: Pick<CheckpointWorkspaceInput, 'turn' | 'kind'> | undefined = ofCall
          ? withKind(decode<RunToolInput>(scheduled.input)?.checkpoint)
          : decode<CheckpointWorkspaceInput>(scheduled.input);
        if (!input) continue;
        const record: CheckpointRecord = {
          turn: input.turn,
          kind: input.kind,
          activityId: scheduled.activityId ?? '',
          taskQueue: scheduled.taskQueue?.name ?? '',
        };
        records.push(record);
        byScheduledId.set(String(event.eventId), { record, ofCall });
        continue;
      }
      const completed = event.activityTaskCompletedEventAttributes;
      const done = completed && byScheduledId.get(String(completed.scheduledEventId));
      if (done) {
        // A short result has no time of its own: it was recorded as its activity completed.
        const completedAt = new Date(eventTimeMs(event)).toISOString();
        const outcome = done.ofCall ? decode<ToolOutcome>(completed.result) : undefined;
        const result = done.ofCall ? outcome?.checkpoint : decode<CheckpointResult>(completed.result);
        if (result) done.record.outcome = checkpointOutcome(result, completedAt);
        else if (outcome?.checkpointFailure !== undefined) done.record.failure = outcome.checkpointFailure;
        else if (done.ofCall) withoutOne.add(done.record);
      }
      const failed = event.activityTaskFailedEventAttributes ?? event.activityTaskTimedOutEventAttributes;
      const failedRecord = failed && byScheduledId.get(String(failed.scheduledEventId))?.record;
      if (failedRecord) failedRecord.failure = failed.failure?.message ?? 'failed';
      const cancelled = event.activityTaskCanceledEventAttributes;
      const cancelledRecord = cancelled && byScheduledId.get(String(cancelled.scheduledEventId))?.record;
      if (cancelledRecord) cancelledRecord.failure = 'cancelled';
    }
  }
  return records.filter((record) => !withoutOne.has(record));
}

const withKind = (checkpoint: ToolCallCheckpoint | undefined) =>
  checkpoint && { turn: checkpoint.turn, kind: 'turn' as const };

export function isRecorded(record: CheckpointRecord): record is RecordedCheckpointRecord {
  return record.outcome !== undefined && !isSkipped(record.outcome);
}

type Planned = { ok: true; plan: RewindPlan } | { ok: false; type: string; message: string };
const refuse = (type: string, message: string): Planned => ({ ok: false, type, message });

/** The plan of a rewind of the operation whose runs these are, or why it cannot be made. */
export function planRewind(runs: readonly (readonly HistoryEvent[])[], request: PlanRewindInput): Planned {
  const { operationId, toTurn } = request;
  const raw = decode<unknown>(runs[0]?.[0]?.workflowExecutionStartedEventAttributes?.input);
  const parsed = parseOperationInput(raw);
  if (!parsed.ok) return refuse(REWIND_FAILURE_TYPES.unknownOperation, `${operationId} is not an operation`);
  const settings = parsed.value;
  const steps = runs.flatMap((events) => readRecordedRun(events).steps);
  const done = steps.filter((step): step is ModelStep => step.kind === 'model' && step.result !== undefined);
  const step = done.filter((candidate) => candidate.input.turn === toTurn).at(-1);
  if (!step) {
    const turns = Math.max(0, ...done.map((candidate) => candidate.input.turn));
    return refuse(
      REWIND_FAILURE_TYPES.noSuchTurn,
      `operation ${operationId} has ${turns} completed turn${turns === 1 ? '' : 's'}: there is no turn ${toTurn} to go back to`,
    );
  }
  const checkpoint = checkpointFor(readCheckpoints(runs), toTurn, operationId, settings);
  if ('message' in checkpoint) return refuse(REWIND_FAILURE_TYPES.noCheckpoint, checkpoint.message);
  let continues: LaneContinuation | undefined;
  if (!request.codeOnly) {
    const answers = toolAnswers(steps, step, runs);
    if (typeof answers === 'string') return refuse(REWIND_FAILURE_TYPES.noSuchTurn, answers);
    continues = continuationAfter(operationId, step, answers);
  }
  return {
    ok: true,
    plan: {
      from: {
        sessionId: settings.sessionId ?? sessionIdFor(operationId),
        operationId,
        lane: settings.lane,
        turn: toTurn,
      },
      checkpoint: {
        turn: checkpoint.turn,
        kind: checkpoint.kind,
        commit: checkpoint.outcome.commit,
        taskQueue: checkpoint.taskQueue,
      },
      ...(continues ? { continues } : {}),
      defaults: defaultsOf(settings),
      ...(settings.handsTaskQueue ? { handsTaskQueue: settings.handsTaskQueue } : {}),
    },
  };
}

type ModelStep = Extract<RecordedStep, { kind: 'model' }> & { result: ModelStepResult };

/**
 * The checkpoint holding the workspace at turn `turn`: the latest recorded at or before it, else the
 * operation's base checkpoint (recorded before its first change, so the workspace was the same).
 */
function checkpointFor(
  records: CheckpointRecord[],
  turn: number,
  operationId: string,
  settings: OperationSettings,
): RecordedCheckpointRecord | { message: string } {
  const recorded = records.filter(isRecorded);
  const before = recorded.filter((record) => record.turn <= turn);
  const first = recorded[0];
  const chosen = before.at(-1) ?? (first?.kind === 'base' ? first : undefined);
  if (!chosen) {
    const skipped = records.find((record) => record.outcome && isSkipped(record.outcome))?.outcome;
    const why =
      skipped && isSkipped(skipped)
        ? `its checkpoints were skipped (${skipped.skipped})`
        : !settings.checkpoints.enabled
          ? 'it ran with checkpoints off (checkpoints.enabled: false)'
          : records.length === 0
            ? 'its tools never changed the workspace, or it ran before checkpoints existed'
            : 'no checkpoint of it was recorded at or before that turn';
    return { message: `operation ${operationId} has no checkpoint for turn ${turn}: ${why}` };
  }
  // A checkpoint after the chosen one that failed or has not finished: the workspace at the turn is unknown.
  const gap = records.find(
    (record) => record.turn > chosen.turn && record.turn <= turn && !isRecorded(record) && record.kind === 'turn',
  );
  if (gap) {
    const what = gap.failure ? `failed (${gap.failure})` : 'has not finished';
    return {
      message: `operation ${operationId}: the checkpoint after turn ${gap.turn} ${what}, so turn ${turn}'s workspace is unknown`,
    };
  }
  return chosen;
}

/** The answers to the tool calls of `step`'s reply: what the next request carried, or the operation's open results. */
function toolAnswers(
  steps: RecordedStep[],
  step: ModelStep,
  runs: readonly (readonly HistoryEvent[])[],
): ToolResultBlockParam[] | string {
  const ids = step.result.message.content.flatMap((block) => (block.type === 'tool_use' ? [block.id] : []));
  if (ids.length === 0) return [];
  const after = steps.slice(steps.indexOf(step) + 1);
  const next = after.find(
    (candidate) => candidate.kind === 'compaction' || candidate.input.turn === step.input.turn + 1,
  );
  const blocks = next ? next.input.tail : (operationResultOf(runs)?.openToolResults ?? []);
  const answers = blocks.filter(
    (block): block is ToolResultBlockParam => block.type === 'tool_result' && ids.includes(block.tool_use_id),
  );
  if (answers.length === ids.length) return answers;
  return `turn ${step.input.turn}'s tool calls have not all been answered yet: rewind to it once its tools have run`;
}

/** The lane context after `step` (`common/lanes.ts`), with the answers to its tool calls. */
function continuationAfter(operationId: string, step: ModelStep, answers: ToolResultBlockParam[]): LaneContinuation {
  const { base, tail, clear } = step.input;
  const { message, usage } = step.result;
  return {
    operationId,
    messages: base.messages + (tail.length === 0 ? 0 : 2),
    lastReplyId: message.id,
    compactions: base.compactions ?? 0,
    edits: clear?.batch ?? base.edits ?? 0,
    tokens: promptTokens(usage) + usage.output,
    lastOutput: usage.output,
    ...(message.model ? { model: message.model } : {}),
    clearable: [],
    openToolResults: answers,
  };
}

/** The result the operation ended with (completed, or failed with the result in its details). */
function operationResultOf(runs: readonly (readonly HistoryEvent[])[]): OperationResult | undefined {
  const last = runs.at(-1) ?? [];
  for (const event of last) {
    const completed = event.workflowExecutionCompletedEventAttributes;
    if (completed) return decode<OperationResult>(completed.result);
    const failed = event.workflowExecutionFailedEventAttributes?.failure?.applicationFailureInfo;
    if (failed) return decode<OperationResult>(failed.details);
  }
  return undefined;
}

/** The settings every operation of the new session takes (a prompt may still override them). */
function defaultsOf(settings: OperationSettings): OperationDefaults {
  return {
    ...(settings.model ? { model: settings.model } : {}),
    ...(settings.system ? { system: settings.system } : {}),
    maxTokensPerTurn: settings.maxTokensPerTurn,
    budget: settings.budget,
    ...(settings.approvals ? { approvals: settings.approvals } : {}),
    approvalTimeoutMs: settings.approvalTimeoutMs,
    toolTimeoutMs: settings.toolTimeoutMs,
    egress: settings.egress,
    ...(settings.heartbeatTimeoutMs ? { heartbeatTimeoutMs: settings.heartbeatTimeoutMs } : {}),
    subagents: settings.subagents,
    eagerSandbox: settings.eagerSandbox,
    context: settings.context,
    stuck: settings.stuck,
    checkpoints: settings.checkpoints,
  };
}
