/**
 * The state of one operation run, in one explicit object that every step of the loop receives.
 * `carry` is what survives continue-as-new (counters and references, never the transcript); the rest
 * is rebuilt on each run.
 */
import { workflowInfo } from '@temporalio/workflow';
import type { WorkflowStreamState } from '@temporalio/workflow-streams/workflow';
import type { ApprovalDecisionInput, WaitingApproval } from '../../common/approvals';
import type { ContextClear } from '../../common/context';
import type { ToolOutcome } from '../../common/hands';
import type { McpCatalogue } from '../../common/mcp';
import type { ContextFingerprint, TailBlock } from '../../common/context-fingerprint';
import { ZERO_USAGE, type TokenUsage } from '../../common/model-types';
import type { HandsHost } from '../../common/hands-route';
import { newTokenLedger, type TokenLedger } from '../../common/token-ledger';
import { newContextState, startingContextState, type ContextState } from './context-state';
import type { OperationSettings, OperationStatus } from '../../common/operation';
import type { StuckState } from '../../common/stuck';
import type { LoopWindow } from './loop-detector';
import type { EgressSummary } from '../../common/egress';
import { sessionIdFor } from '../../common/sandbox-names';
import { DEFAULT_HANDS_QUEUE } from '../../common/task-queues';
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
  /** The hands host holding the workspace, once claimed (`../shared/hands-route.ts`). */
  handsHost?: HandsHost;
  /** The recent tool calls the loop detector looks at (`loop-detector.ts`). */
  loop?: LoopWindow;
  /** The context window as planned: size, tool results, compactions, continuations (absent in carries of older runs). */
  context: ContextState;
  /** What the context techniques did (`common/token-ledger.ts`); `usage` above is the money. */
  ledger: TokenLedger;
  /** Session facts received but not yet in the context (absent in runs recorded before sessions). */
  pendingFacts?: string[];
  /** `task` calls started so far (subagents). */
  subagents?: number;
  /** The latest approval decisions (at most 100), so a repeated decision is refused by name. */
  approvalsDecided?: Array<{ toolCallId: string; decision: 'approved' | 'denied' }>;
  /** The live event stream's state (`live.ts`), set just before continue-as-new. */
  live?: WorkflowStreamState;
  /** The MCP tools listed for this operation (`mcp-tools.ts`); absent without `mcpServers`. */
  mcp?: McpCatalogue;
  /** The requests made through the egress proxy so far (absent until the first). */
  egress?: EgressSummary;
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
  /** Set while an activity the operation waits on is stuck (`stuck.ts`). */
  stuck?: StuckState;
  /** What the operation waits for now, in words. */
  waitingFor?: string;
  /** What the previous model turn did, for the next step's summary (`turn 7 → bash · 12.4k tokens`). */
  lastTurnOutcome?: string;
  /** The clear batch the next model step carries (planned at the checkpoint). */
  nextClear?: ContextClear;
  /** Outcomes of the current tool batch by tool call id (their spill sizes feed the ledger). */
  toolOutcomes: Map<string, ToolOutcome>;
  /** The tool call waiting for a person, and the decision once it came. */
  waitingApproval?: WaitingApproval;
  approvalDecision?: ApprovalDecisionInput;
  /** Tool call ids of this run's replies (so an approval for a call that is not waiting is told apart from an unknown one). */
  readonly seenToolCalls: Set<string>;
  /** What followers see live (`live.ts`). */
  readonly live: LiveEvents;
}

/** Sets up the run's state from its validated input and, in a continued run, the carry. */
export function startOperationRun(settings: OperationSettings, carry: OperationCarry | undefined): OperationRun {
  const operationId = workflowInfo().workflowId;
  const state = carry ?? newCarry(settings);
  state.runs += 1;
  // Carries of runs recorded before the context ledger existed.
  state.context ??= newContextState();
  state.ledger ??= newTokenLedger();
  return {
    settings,
    operationId,
    sessionId: settings.sessionId ?? sessionIdFor(operationId),
    handsQueue: settings.handsTaskQueue ?? DEFAULT_HANDS_QUEUE,
    carry: state,
    phase: 'starting',
    toolOutcomes: new Map(),
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
    context: startingContextState(continues),
    ledger: newTokenLedger(),
    // The session or the parent operation knows where the workspace is; otherwise the first hands call claims a host.
    ...(settings.handsHost ? { handsHost: settings.handsHost } : {}),
  };
}

/** The context the next step's request starts from, as the brain identifies it. */
export function contextFingerprint(op: OperationRun): Required<ContextFingerprint> {
  const { carry } = op;
  return {
    messages: carry.messages,
    lastReplyId: carry.lastReplyId,
    compactions: carry.context.compactions,
    edits: carry.context.edits,
  };
}

/**
 * `continues` for a context step whose base is still the context the operation took over from its
 * lane's previous operation (the brain then finds that context in the previous operation's cache or
 * history); nothing once the operation's own steps have moved the context on.
 */
export function continuationOf(op: OperationRun): { continues?: string } {
  const from = op.settings.continues;
  if (!from || from.messages === 0) return {};
  const base = contextFingerprint(op);
  const unchanged =
    base.messages === from.messages &&
    base.lastReplyId === from.lastReplyId &&
    base.compactions === from.compactions &&
    base.edits === from.edits;
  return unchanged ? { continues: from.operationId } : {};
}

/** The heartbeat override of every activity of the operation (`heartbeatTimeoutMs`), if set. */
export function heartbeatOverride(op: OperationRun): { heartbeatTimeout?: number } {
  return op.settings.heartbeatTimeoutMs === undefined ? {} : { heartbeatTimeout: op.settings.heartbeatTimeoutMs };
}
