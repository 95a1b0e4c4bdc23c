/**
 * The state of one operation run, in one explicit object that every step of the loop receives.
 * `carry` is what survives continue-as-new (counters and references, never the transcript); the rest
 * is rebuilt on each run.
 */
import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';
import type { WorkflowStreamState } from '@temporalio/workflow-streams/workflow';
import type { ApprovalDecisionInput, WaitingApproval } from '../common/approvals';
import type { TailBlock } from '../common/model-step';
import { ZERO_USAGE, type TokenUsage } from '../common/model-types';
import { parseOperationInput, type OperationSettings, type OperationStatus } from '../common/operation';
import { sessionIdFor } from '../common/sandbox-names';
import { DEFAULT_HANDS_QUEUE } from '../common/task-queues';
import { openLiveEvents, type LiveEvents } from './live';

/** State carried across continue-as-new (its field names are part of recorded histories: keep them). */
export interface OperationCarry {
  turn: number;
  steps: number;
  usage: TokenUsage;
  /** Messages in the model's context so far (the base fingerprint). */
  messages: number;
  lastReplyId: string | null;
  /** The next user message: the goal, then tool results and steering. */
  tail: TailBlock[];
  pendingSteering: string[];
  sandboxUsed: boolean;
  seeded: boolean;
  startedAtMs: number;
  runs: number;
  finalText: string;
  /** Session facts received but not yet in the context (absent in runs recorded before sessions). */
  pendingFacts?: string[];
  /** `task` calls started so far (subagents). */
  subagents?: number;
  /** The latest approval decisions (at most 100), so a repeated decision is refused by name. */
  approvalsDecided?: Array<{ toolCallId: string; decision: 'approved' | 'denied' }>;
  /** The live event stream's state (`live.ts`), set just before continue-as-new. */
  live?: WorkflowStreamState;
}

export type EndState = 'completed' | 'failed' | 'aborted';

/** How the operation ended: its one terminal state and why. */
export class OperationEnd {
  constructor(
    readonly state: EndState,
    readonly reason: string,
  ) {}
}

export interface OperationRun {
  readonly settings: OperationSettings;
  readonly operationId: string;
  /** The session whose sandbox the tools run in (defaults to one derived from the workflow id). */
  readonly sessionId: string;
  readonly handsQueue: string;
  readonly carry: OperationCarry;
  phase: OperationStatus['phase'];
  lastTool?: OperationStatus['lastTool'];
  /** Set when an abort was accepted; the loop stops at the next opportunity. */
  abortReason?: string;
  ended?: OperationEnd;
  /** The tool call waiting for a person, and the decision once it came. */
  waitingApproval?: WaitingApproval;
  approvalDecision?: ApprovalDecisionInput;
  /** Tool call ids of this run's replies (so an approval for a call that is not waiting is told apart from an unknown one). */
  readonly seenToolCalls: Set<string>;
  /** What followers see live (`live.ts`). */
  readonly live: LiveEvents;
}

/** Validates the input (failing the workflow with `InvalidOperationInput`) and sets up the run's state. */
export function startOperationRun(rawInput: unknown, carry: OperationCarry | undefined): OperationRun {
  const parsed = parseOperationInput(rawInput);
  if (!parsed.ok) {
    throw ApplicationFailure.nonRetryable(`invalid operation input: ${parsed.error}`, 'InvalidOperationInput');
  }
  const settings = parsed.value;
  const operationId = workflowInfo().workflowId;
  const state = carry ?? newCarry(settings);
  state.runs += 1;
  return {
    settings,
    operationId,
    sessionId: settings.sessionId ?? sessionIdFor(operationId),
    handsQueue: settings.handsTaskQueue ?? DEFAULT_HANDS_QUEUE,
    carry: state,
    phase: 'starting',
    seenToolCalls: new Set(),
    live: openLiveEvents(operationId, state.live),
  };
}

function newCarry(settings: OperationSettings): OperationCarry {
  const { continues, notes } = settings;
  return {
    turn: 0,
    steps: 0,
    usage: { ...ZERO_USAGE },
    // A lane's next operation starts from the context its previous one ended with: the answers to
    // any tool calls that reply left open come first, then notes, then the goal.
    messages: continues?.messages ?? 0,
    lastReplyId: continues?.lastReplyId ?? null,
    tail: [
      ...((continues?.openToolResults ?? []) as TailBlock[]),
      ...(notes ?? []).map((text): TailBlock => ({ type: 'text', text })),
      { type: 'text', text: settings.goal },
    ],
    pendingSteering: [],
    sandboxUsed: false,
    seeded: false,
    startedAtMs: Date.now(),
    runs: 0,
    finalText: '',
  };
}

/** The heartbeat override of every activity of the operation (`heartbeatTimeoutMs`), if set. */
export function heartbeatOverride(op: OperationRun): { heartbeatTimeout?: number } {
  return op.settings.heartbeatTimeoutMs === undefined ? {} : { heartbeatTimeout: op.settings.heartbeatTimeoutMs };
}
