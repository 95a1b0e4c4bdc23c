/**
 * Lanes: accepting prompts, starting each lane's operations as child workflows, queueing follow-ups
 * behind a busy lane, and moving the lane's conversation forward when an operation ends.
 *
 *  - The `prompt` Update is validated (a bad field, a lane being aborted, a duplicate operation id, a
 *    different repository are refused by name, leaving no history) and accepted durably: its result
 *    is the operation id once the child has started, or its place in the lane's queue.
 *  - Handlers run one at a time up to their first `await`, and a lane is marked busy before it, so
 *    two prompts racing for an idle lane never both start: the second is queued.
 *  - A lane's next operation continues the lane's context (`continues`): the context its previous
 *    operation ended with (after its compactions and clear batches), the answers to any tool calls
 *    its last reply left open, and the notes (facts, steering) the lane has not seen. A prompt with
 *    `newContext` starts fresh.
 *  - When an operation ends aborted, the lane's queued follow-ups are cancelled (recorded in the index).
 */
import { ApplicationFailure, ParentClosePolicy, setHandler, startChild, condition } from '@temporalio/workflow';
import { mergeApprovalRules } from '../../common/approvals';
import { mergeHooks } from '../../common/hooks';
import { factNote, type LaneContext } from '../../common/lanes';
import { OPERATION_WORKFLOW_TYPE, type OperationInput, type OperationResult } from '../../common/operation';
import {
  parsePrompt,
  promptUpdate,
  SESSION_FAILURE_TYPES,
  sessionOperationId,
  type PromptAccepted,
  type SessionSettings,
} from '../../common/session';
import { childFailureMessage, resultOfFailedOperation } from '../shared/child-operation';
import { crashPoints } from '../shared/crash-point-sink';
import { recordOperationCost } from './ledger';
import { addIndexEntry, indexEntry, laneOf, nowIso, type LaneState, type QueuedPrompt, type SessionRun } from './state';
import { releaseLeasesOf } from './sandbox';
import { showSessionDetails } from './visibility';

export function acceptPrompts(s: SessionRun): void {
  setHandler(promptUpdate, (raw) => acceptPrompt(s, raw), { validator: (raw) => checkPrompt(s, raw) });
}

function rejected(type: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true });
}

function checkPrompt(s: SessionRun, raw: unknown): void {
  const parsed = parsePrompt(raw);
  if (!parsed.ok) throw rejected(SESSION_FAILURE_TYPES.invalidPrompt, `invalid prompt: ${parsed.error}`);
  const prompt = parsed.value;
  if (prompt.repo && !sameRepo(prompt.repo, s.settings.repo)) {
    throw rejected(
      SESSION_FAILURE_TYPES.repoMismatch,
      `repo: session ${s.sessionId} works on ${describeRepo(s.settings.repo)}; its workspace is seeded once, so start a new session for another repository`,
    );
  }
  const lane = s.carry.lanes[prompt.lane];
  if (lane?.aborting) {
    throw rejected(
      SESSION_FAILURE_TYPES.laneAborting,
      `lane ${prompt.lane} is being aborted (operation ${lane.open}); send the prompt again once it has ended`,
    );
  }
  if (prompt.operationId && indexEntry(s, prompt.operationId)) {
    throw rejected(
      SESSION_FAILURE_TYPES.duplicateOperation,
      `operationId: session ${s.sessionId} already has an operation ${prompt.operationId}`,
    );
  }
  if (prompt.system && lane?.context && !prompt.newContext) {
    throw rejected(
      SESSION_FAILURE_TYPES.invalidPrompt,
      `invalid prompt: system: lane ${prompt.lane} continues its conversation, whose system prompt is fixed; use newContext for a fresh one`,
    );
  }
}

/** Accepts a checked prompt: its operation starts, or it is queued behind the lane's open one. */
export async function acceptPrompt(s: SessionRun, raw: unknown): Promise<PromptAccepted> {
  const parsed = parsePrompt(raw);
  if (!parsed.ok) throw rejected(SESSION_FAILURE_TYPES.invalidPrompt, parsed.error);
  const prompt = parsed.value;
  const lane = laneOf(s, prompt.lane);
  const operationId = prompt.operationId ?? sessionOperationId(s.sessionId, s.carry.nextOperation);
  s.carry.nextOperation += 1;
  const queued: QueuedPrompt = { operationId, prompt, acceptedAt: nowIso() };
  addIndexEntry(s, {
    operationId,
    lane: lane.name,
    prompt: prompt.prompt.slice(0, 200),
    state: 'queued',
    acceptedAt: queued.acceptedAt,
  });
  crashPoints.reached('session: prompt accepted');
  const accepted = { operationId, sessionId: s.sessionId, lane: lane.name };
  if (lane.open || lane.queue.length > 0) {
    lane.queue.push(queued);
    crashPoints.reached('session: follow-up queued');
    showSessionDetails(s);
    return { ...accepted, state: 'queued', position: lane.queue.length };
  }
  lane.open = operationId;
  await startLaneOperation(s, lane, queued);
  return { ...accepted, state: 'started' };
}

/** Starts `queued` as the lane's open operation (already marked `lane.open`) and watches it end. */
async function startLaneOperation(s: SessionRun, lane: LaneState, queued: QueuedPrompt): Promise<void> {
  const { operationId } = queued;
  s.starting += 1;
  try {
    // A container being removed must be gone before an operation may create the next one.
    await condition(() => s.sandbox !== 'removing');
    const fresh = queued.prompt.newContext || !lane.context;
    const notes = [...(fresh ? [] : lane.pendingNotes), ...factNotesFor(s, lane, fresh)];
    s.running.set(operationId, {
      lane: lane.name,
      start: fresh ? undefined : lane.context,
      continuesFrom: fresh ? undefined : lane.context?.operationId,
      notes: lane.pendingNotes,
      root: operationId,
    });
    lane.pendingNotes = [];
    lane.factsSeen = s.carry.factSeq;
    lane.operations += 1;
    const child = await startChild<(input: OperationInput) => Promise<OperationResult>>(OPERATION_WORKFLOW_TYPE, {
      workflowId: operationId,
      args: [operationInput(s, lane, queued, fresh, notes)],
      staticSummary: oneLine(queued.prompt.prompt, 200),
      staticDetails: `session ${s.sessionId} · lane ${lane.name}`,
      // Terminating or cancelling the session aborts its operations cleanly.
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    });
    if (s.sandbox !== 'kept') s.sandbox = 'up';
    const entry = indexEntry(s, operationId);
    if (entry) entry.state = 'running';
    crashPoints.reached('session: operation started');
    showSessionDetails(s);
    // Not awaited: the prompt's Update returns once the child has started; the watch records its end
    // (it catches every failure itself).
    void watchOperation(s, lane, operationId, child.result());
  } catch (err) {
    // The child could not start (e.g. its id is taken by a running workflow): record it, move on.
    operationEnded(s, lane, operationId, undefined, `could not start: ${childFailureMessage(err)}`);
    throw rejected('OperationNotStarted', `operation ${operationId} could not start: ${childFailureMessage(err)}`);
  } finally {
    s.starting -= 1;
  }
}

async function watchOperation(
  s: SessionRun,
  lane: LaneState,
  operationId: string,
  outcome: Promise<OperationResult>,
): Promise<void> {
  try {
    operationEnded(s, lane, operationId, await outcome);
  } catch (err) {
    const result = resultOfFailedOperation(err);
    operationEnded(s, lane, operationId, result, result ? undefined : childFailureMessage(err));
  }
}

/** Records how a lane's operation ended, moves the lane's context forward and starts the next follow-up. */
function operationEnded(
  s: SessionRun,
  lane: LaneState,
  operationId: string,
  result: OperationResult | undefined,
  failure?: string,
): void {
  const running = s.running.get(operationId);
  s.running.delete(operationId);
  const state = result?.state ?? 'failed';
  const reason = result?.reason ?? failure ?? 'unknown';
  const entry = indexEntry(s, operationId);
  if (entry) {
    Object.assign(entry, { state, reason, endedAt: nowIso() });
    if (result) Object.assign(entry, { turns: result.turns, usage: result.usage, costUsd: result.costUsd });
  }
  recordOperationCost(s, lane.name, result);
  if (lane.open === operationId) lane.open = undefined;
  lane.aborting = false;
  lane.last = { operationId, state, reason };
  if (result?.context) {
    // The context lives in this operation's history once it moved it (a reply, a compaction, a clear
    // batch); an operation that did not still continues from where it started.
    const progressed = !running?.start || movedContext(running.start, result.context);
    const from = progressed ? operationId : running?.continuesFrom;
    lane.context =
      result.context.messages > 0 && from
        ? { ...result.context, operationId: from, openToolResults: result.openToolResults }
        : undefined;
    lane.pendingNotes = result.pendingNotes ?? [];
  } else if (running) {
    lane.pendingNotes = [...running.notes, ...lane.pendingNotes];
  }
  // Where the workspace is: the operation's release at its end is not delivered (it ends first).
  if (result?.handsRoute) s.carry.handsHost = result.handsRoute;
  releaseLeasesOf(s, operationId);
  closeForkedLanes(s, operationId);
  crashPoints.reached('session: operation ended');
  if (state === 'aborted') cancelQueue(s, lane, `lane ${lane.name}'s operation ${operationId} was aborted`);
  startNextFollowUp(s, lane);
  showSessionDetails(s);
}

function movedContext(start: LaneContext, end: LaneContext): boolean {
  return (
    start.messages !== end.messages ||
    start.lastReplyId !== end.lastReplyId ||
    (start.compactions ?? 0) !== (end.compactions ?? 0) ||
    (start.edits ?? 0) !== (end.edits ?? 0)
  );
}

function startNextFollowUp(s: SessionRun, lane: LaneState): void {
  const next = lane.queue.shift();
  if (!next) return;
  lane.open = next.operationId;
  // Failures are recorded in the index by startLaneOperation; nobody waits on this one.
  startLaneOperation(s, lane, next).catch(() => undefined);
}

export function cancelQueue(s: SessionRun, lane: LaneState, reason: string): void {
  for (const queued of lane.queue.splice(0)) {
    const entry = indexEntry(s, queued.operationId);
    if (entry) Object.assign(entry, { state: 'cancelled', reason, endedAt: nowIso() });
  }
}

/** Forked lanes of an operation that ended cannot stay open (their `forkEnded` may never come). */
function closeForkedLanes(s: SessionRun, root: string): void {
  for (const lane of Object.values(s.carry.lanes)) {
    if (lane.root !== root || !lane.open) continue;
    const entry = indexEntry(s, lane.open);
    if (entry && (entry.state === 'running' || entry.state === 'queued')) {
      Object.assign(entry, { state: 'failed', reason: `its parent operation ${root} ended`, endedAt: nowIso() });
    }
    s.running.delete(lane.open);
    lane.open = undefined;
  }
}

function factNotesFor(s: SessionRun, lane: LaneState, fresh: boolean): string[] {
  return Object.entries(s.carry.facts)
    .filter(([, fact]) => fresh || fact.seq > lane.factsSeen)
    .sort(([, a], [, b]) => a.seq - b.seq)
    .map(([key, fact]) => factNote(key, fact.value));
}

function operationInput(
  s: SessionRun,
  lane: LaneState,
  queued: QueuedPrompt,
  fresh: boolean,
  notes: string[],
): OperationInput {
  const { defaults } = s.settings;
  const prompt = queued.prompt;
  const approvals = mergeApprovalRules(defaults.approvals, prompt.approvals);
  const pick = <K extends keyof typeof defaults>(key: K) => prompt[key] ?? defaults[key];
  const optional: Partial<OperationInput> = {
    model: pick('model'),
    system: fresh ? pick('system') : undefined,
    maxTokensPerTurn: pick('maxTokensPerTurn'),
    budget: pick('budget'),
    approvalTimeoutMs: pick('approvalTimeoutMs'),
    toolTimeoutMs: pick('toolTimeoutMs'),
    egress: pick('egress'),
    heartbeatTimeoutMs: pick('heartbeatTimeoutMs'),
    subagents: pick('subagents'),
    eagerSandbox: pick('eagerSandbox'),
    context: pick('context'),
    stuck: pick('stuck'),
    checkpoints: pick('checkpoints'),
    approvals,
    hooks: mergeHooks(defaults.hooks, prompt.hooks),
    maxStopBlocks: pick('maxStopBlocks'),
    repo: s.settings.repo,
    environment: s.settings.environment,
    handsTaskQueue: s.settings.handsTaskQueue,
    continues: fresh ? undefined : lane.context,
    notes: notes.length > 0 ? notes : undefined,
  };
  const defined = Object.fromEntries(Object.entries(optional).filter(([, value]) => value !== undefined));
  return {
    goal: prompt.prompt,
    sessionId: s.sessionId,
    lane: lane.name,
    session: { workflowId: s.workflowId },
    ...defined,
  };
}

function sameRepo(a: NonNullable<SessionSettings['repo']>, b: SessionSettings['repo']): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function describeRepo(repo: SessionSettings['repo']): string {
  if (!repo) return 'no repository';
  return repo.kind === 'local' ? repo.path : repo.url;
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}
