/**
 * The state of one session run, in one explicit object every part of the session workflow receives.
 * `carry` is what survives continue-as-new (lanes, the index of operations, facts — the session only
 * continues as new while idle, so no operation is open then); the rest lives for one run.
 */
import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';
import type { HandsHost } from '../../common/hands-route';
import type { LaneContext, LaneContinuation } from '../../common/lanes';
import type { RewoundFrom } from '../../common/session-fork';
import {
  parseSessionInput,
  SESSION_FAILURE_TYPES,
  sessionIdOfWorkflow,
  type FactRecord,
  type OperationIndexEntry,
  type PromptSettings,
  type SessionLedger,
  type SessionSettings,
  type SessionStatus,
} from '../../common/session';
import { sessionIdFor } from '../../common/sandbox-names';

/** A prompt accepted for a busy lane: it starts when the lane's open operation ends. */
export interface QueuedPrompt {
  operationId: string;
  prompt: PromptSettings;
  acceptedAt: string;
}

export interface LaneState {
  name: string;
  createdAt: string;
  /** The open operation (at most one per lane). */
  open?: string;
  /** An abort of the open operation was accepted: follow-ups are refused until it has ended. */
  aborting?: boolean;
  queue: QueuedPrompt[];
  /** Where the lane's next operation continues; absent for a fresh context. */
  context?: LaneContinuation;
  /** Text the lane's context has not seen yet (steering and facts its last operation did not send). */
  pendingNotes: string[];
  /** The sequence number of the last fact sent to this lane. */
  factsSeen: number;
  operations: number;
  last?: { operationId: string; state: string; reason?: string };
  forkedFrom?: { lane: string; operationId: string; toolCallId: string };
  /** For the lane a rewind made: the operation and turn it continues (`fork.ts`). */
  rewoundFrom?: RewoundFrom;
  /** For a forked lane: the top-level operation it belongs to (it cannot outlive it). */
  root?: string;
}

/** State carried across continue-as-new (field names are part of recorded histories: keep them). */
export interface SessionCarry {
  lanes: Record<string, LaneState>;
  operations: OperationIndexEntry[];
  /** Number of the next operation (`op-<sessionId>.<n>`). */
  nextOperation: number;
  facts: Record<string, FactRecord>;
  factSeq: number;
  startedAtMs: number;
  runs: number;
  /** The hands host holding the session's workspace, as its lanes' operations reported it (hands routing). */
  handsHost?: HandsHost;
  /** What the operations that ended used, per lane and in all (absent in runs before the first ended). */
  ledger?: SessionLedger;
}

/** An operation the session runs now (not carried: the session continues as new only while idle). */
export interface RunningOperation {
  lane: string;
  /** The context it started from (absent: a fresh one), and the operation holding it. */
  start?: LaneContext;
  continuesFrom?: string;
  /** Notes handed to it, restored to the lane if it ends without a result. */
  notes: string[];
  /** The top-level operation (itself, or the one whose `task` call forked it). */
  root: string;
}

export interface SessionRun {
  readonly settings: SessionSettings;
  readonly sessionId: string;
  readonly workflowId: string;
  readonly carry: SessionCarry;
  readonly running: Map<string, RunningOperation>;
  /** Operations being started right now (their Update waits for the start). */
  starting: number;
  sandbox: SessionStatus['sandbox']['state'];
  lease: { holder?: string; waiting: string[]; yieldSent: boolean };
}

/** Index entries kept across continue-as-new (older ones stay in the history and `agent events`). */
export const INDEX_KEPT = 500;

export function startSessionRun(rawInput: unknown, carry: SessionCarry | undefined): SessionRun {
  const parsed = parseSessionInput(rawInput);
  if (!parsed.ok) {
    throw ApplicationFailure.nonRetryable(
      `invalid session input: ${parsed.error}`,
      SESSION_FAILURE_TYPES.invalidSessionInput,
    );
  }
  const settings = parsed.value;
  const { workflowId } = workflowInfo();
  const fromId = sessionIdOfWorkflow(workflowId);
  if (settings.sessionId && fromId && settings.sessionId !== fromId) {
    throw ApplicationFailure.nonRetryable(
      `invalid session input: sessionId: "${settings.sessionId}" does not match the workflow id ${workflowId}`,
      SESSION_FAILURE_TYPES.invalidSessionInput,
    );
  }
  const state = carry ?? {
    lanes: {},
    operations: [],
    nextOperation: 1,
    facts: {},
    factSeq: 0,
    startedAtMs: Date.now(),
    runs: 0,
  };
  state.runs += 1;
  return {
    settings,
    sessionId: settings.sessionId ?? fromId ?? sessionIdFor(workflowId),
    workflowId,
    carry: state,
    running: new Map(),
    starting: 0,
    sandbox: settings.keepContainer ? 'kept' : 'unused',
    lease: { waiting: [], yieldSent: false },
  };
}

/** No operation open or queued, none being started. */
export function isIdle(s: SessionRun): boolean {
  return s.starting === 0 && Object.values(s.carry.lanes).every((lane) => !lane.open && lane.queue.length === 0);
}

export function laneOf(s: SessionRun, name: string): LaneState {
  const existing = s.carry.lanes[name];
  if (existing) return existing;
  const lane: LaneState = {
    name,
    createdAt: new Date(Date.now()).toISOString(),
    queue: [],
    pendingNotes: [],
    factsSeen: 0,
    operations: 0,
  };
  s.carry.lanes[name] = lane;
  return lane;
}

export function indexEntry(s: SessionRun, operationId: string): OperationIndexEntry | undefined {
  return s.carry.operations.find((entry) => entry.operationId === operationId);
}

export function addIndexEntry(s: SessionRun, entry: OperationIndexEntry): void {
  s.carry.operations.push(entry);
  if (s.carry.operations.length > INDEX_KEPT) s.carry.operations.splice(0, s.carry.operations.length - INDEX_KEPT);
}

export const nowIso = (): string => new Date(Date.now()).toISOString();
