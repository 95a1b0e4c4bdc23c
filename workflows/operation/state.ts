/**
 * The operation's state, and the one module that changes it.
 *
 * `OperationRun` holds what every step of the loop works on: `carry`, what survives continue-as-new
 * (counters and references, never the transcript), and what lives for one run (phase, the tool
 * batch in progress, a waiting approval, a stuck verdict…). Other modules read it — `carry` and the
 * rest are read-only outside this file — and change it only through the named transitions below
 * (a turn started, a reply recorded, tool results recorded, a compaction, steering entered, an
 * approval decided, a hands host claimed, the end…). What a step changes is worked out where the
 * step lives (the context arithmetic in `context-state.ts`, the loop detector's verdict, the stop
 * reasons' continuation) and handed here to be applied; so a new piece of state, and every place
 * it changes, is in this one file.
 *
 * Transitions are plain assignments to in-memory state: they schedule nothing, so the commands a
 * run sends, and their order, are those of the steps that call them.
 */
import { workflowInfo } from '@temporalio/workflow';
import type { WorkflowStreamState } from '@temporalio/workflow-streams/workflow';
import type { ApprovalDecisionInput, WaitingApproval } from '../../common/approvals';
import type { BudgetAsks } from '../../common/budget';
import { isSkipped, type CheckpointResult } from '../../common/checkpoints';
import type { CompactContextResult, CompactionReason, ContextClear } from '../../common/context';
import type { TailBlock } from '../../common/context-fingerprint';
import { addEgress, EMPTY_EGRESS, type EgressSummary } from '../../common/egress';
import type { PreparedEnvironment } from '../../common/environment';
import type { ToolOutcome } from '../../common/hands';
import type { HandsHost } from '../../common/hands-route';
import type { HookDecision, HookEventName, HookSettings } from '../../common/hooks';
import { factNote } from '../../common/lanes';
import type { McpCatalogue } from '../../common/mcp';
import type { ModelStepResult } from '../../common/model-step';
import { addUsage, ZERO_USAGE, type TokenUsage, type ToolUseBlock } from '../../common/model-types';
import type { OperationResult, OperationSettings, OperationStatus } from '../../common/operation';
import { sessionIdFor } from '../../common/sandbox-names';
import type { StuckState } from '../../common/stuck';
import { DEFAULT_HANDS_QUEUE } from '../../common/task-queues';
import {
  ledgerClearBatch,
  ledgerCompaction,
  ledgerFailedStep,
  ledgerModelRequest,
  ledgerToolResult,
  newTokenLedger,
  type TokenLedger,
} from '../../common/token-ledger';
import {
  contextAfterCompaction,
  contextAfterReply,
  newContextState,
  startingContextState,
  trackedResults,
  worthTracking,
  type ContextState,
} from './context-state';
import { openLiveEvents, type LiveEvents } from './live';
import type { LoopVerdict, LoopWindow } from './loop-detector';
import { replyText, turnOutcome } from './reply';

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
  /** The workspace's environment, once prepared (`sandbox.ts`; absent in runs recorded before environments). */
  environment?: PreparedEnvironment;
  /** The environment's update commands ran in this workspace. */
  workspaceSetUp?: boolean;
  /** Budget approvals asked so far and what the approved ones added (`budget.ts`; absent until the first). */
  budgetAsks?: BudgetAsks;
  /** The repository's own hooks (`hooks.ts`), read with the seed check where the hands worker allows them. */
  repositoryHooks?: HookSettings;
  /** How many times Stop hooks refused the end so far (`maxStopBlocks` caps it). */
  stopBlocks?: number;
  /** The checkpoints of the workspace so far (`checkpoints.ts`; absent before the first). */
  checkpoints?: CheckpointsState;
}

/** What the operation knows of its checkpoints (each one's commit is in its activity's result). */
export interface CheckpointsState {
  /** Checkpoints recorded (a base one included). */
  taken: number;
  /** The latest one. */
  last?: { turn: number; commit: string };
  /** The turn of the latest one tried (recorded, skipped or failed). */
  tried?: number;
  /** Why the sandbox cannot record any (its image has no git): none is tried again. */
  skipped?: string;
  /** Checkpoints that failed, and the latest reason. */
  failed?: number;
  lastFailure?: string;
}

export type EndState = 'completed' | 'failed' | 'aborted';

/** How the operation ended: its one terminal state and why. */
export class OperationEnd {
  constructor(
    readonly state: EndState,
    readonly reason: string,
  ) {}
}

/**
 * Read-only all the way down — except the content blocks of the model's messages and the records
 * the operation only ever replaces whole, which keep their own types so they can be handed on.
 */
type ReadOnly<T> = T extends TailBlock | McpCatalogue | EgressSummary | WorkflowStreamState | PreparedEnvironment
  ? T
  : T extends readonly (infer U)[]
    ? readonly ReadOnly<U>[]
    : T extends object
      ? { readonly [K in keyof T]: ReadOnly<T[K]> }
      : T;

/** The carry as every module but this one sees it. */
export type CarryView = ReadOnly<OperationCarry>;

export type LastTool = NonNullable<OperationStatus['lastTool']>;

/**
 * How the next request continues a reply that ran no tool (or whose tool calls were cut off), as
 * the stop reasons decide it (`stop-reasons.ts`).
 */
export interface ReplyContinuation {
  /** The next user message (empty: resume a paused turn). */
  tail: TailBlock[];
  /** Counts against `context.maxContinuations` (a continuation in a row). */
  counted: boolean;
  /** The next request resumes the paused turn. */
  resumePause?: true;
  /** The context is to be compacted first. */
  compaction?: CompactionReason;
}

/** The approval decisions kept in the carry (so a repeated one is refused by name). */
const DECIDED_KEPT = 100;

/** How queued steering reads in the context. */
export const steeringNote = (text: string): string => `[steering from the user] ${text}`;

/** The latest hook decision, as the Web UI's details show it. */
export interface LastHook {
  event: HookEventName;
  summary: string;
  decision: HookDecision;
  toolCallId?: string;
}

/** How a Stop hook's refusal reads in the context. */
export const stopRefusalNote = (reason: string): string => `[a Stop hook refused the end of your turn] ${reason}`;

/** What lives for one run only (rebuilt on each). */
interface RunOnly {
  phase: OperationStatus['phase'];
  lastTool?: LastTool;
  abortReason?: string;
  ended?: OperationEnd;
  stuck?: StuckState;
  waitingFor?: string;
  lastTurnOutcome?: string;
  nextClear?: ContextClear;
  waitingApproval?: WaitingApproval;
  approvalDecision?: ApprovalDecisionInput;
  /** Why the workspace's environment could not be prepared (the operation then ends failed). */
  environmentFailure?: string;
  lastHook?: LastHook;
  /** Replies voided so far (`seed-check.ts`): the turn asked again gets an activity id of its own. */
  voidReplies?: number;
}

export class OperationRun {
  readonly operationId: string;
  /** The session whose sandbox the tools run in (defaults to one derived from the workflow id). */
  readonly sessionId: string;
  readonly handsQueue: string;
  /** What followers see live (`live.ts`). */
  readonly live: LiveEvents;
  private readonly state: OperationCarry;
  private readonly now: RunOnly = { phase: 'starting' };
  private readonly outcomes = new Map<string, ToolOutcome>();
  private readonly seenCalls = new Set<string>();
  private readonly callsAhead = new Set<string>();
  private readonly decisionsAhead = new Map<string, ApprovalDecisionInput>();

  constructor(
    readonly settings: OperationSettings,
    carry: OperationCarry | undefined,
  ) {
    this.operationId = workflowInfo().workflowId;
    this.sessionId = settings.sessionId ?? sessionIdFor(this.operationId);
    this.handsQueue = settings.handsTaskQueue ?? DEFAULT_HANDS_QUEUE;
    const state = carry ?? newCarry(settings);
    state.runs += 1;
    // Carries of runs recorded before the context ledger existed.
    state.context ??= newContextState();
    state.ledger ??= newTokenLedger();
    this.state = state;
    this.live = openLiveEvents(this.operationId, state.live);
  }

  get carry(): CarryView {
    return this.state;
  }
  get phase(): OperationStatus['phase'] {
    return this.now.phase;
  }
  get lastTool(): Readonly<LastTool> | undefined {
    return this.now.lastTool;
  }
  /** Set when an abort was accepted; the loop stops at the next opportunity. */
  get abortReason(): string | undefined {
    return this.now.abortReason;
  }
  get ended(): OperationEnd | undefined {
    return this.now.ended;
  }
  /** Set when the workspace's environment could not be prepared: the loop ends the operation failed. */
  get environmentFailure(): string | undefined {
    return this.now.environmentFailure;
  }
  /** Set while an activity the operation waits on is stuck (`stuck.ts`). */
  get stuck(): Readonly<StuckState> | undefined {
    return this.now.stuck;
  }
  /** What the operation waits for now, in words. */
  get waitingFor(): string | undefined {
    return this.now.waitingFor;
  }
  /** What the previous model turn did, for the next step's summary (`turn 7 → bash · 12.4k tokens`). */
  get lastTurnOutcome(): string | undefined {
    return this.now.lastTurnOutcome;
  }
  /** The clear batch the next model step carries (planned at the checkpoint). */
  get nextClear(): Readonly<ContextClear> | undefined {
    return this.now.nextClear;
  }
  /** The tool call waiting for a person, and the decision once it came. */
  get waitingApproval(): Readonly<WaitingApproval> | undefined {
    return this.now.waitingApproval;
  }
  get approvalDecision(): Readonly<ApprovalDecisionInput> | undefined {
    return this.now.approvalDecision;
  }
  /** Outcomes of the current tool batch by tool call id (their spill sizes feed the ledger). */
  get toolOutcomes(): ReadonlyMap<string, ToolOutcome> {
    return this.outcomes;
  }
  /** The latest hook decision (`hooks.ts`). */
  get lastHook(): Readonly<LastHook> | undefined {
    return this.now.lastHook;
  }
  /** Tool call ids of this run's replies (so an approval for a call that is not waiting is told apart from an unknown one). */
  get seenToolCalls(): ReadonlySet<string> {
    return this.seenCalls;
  }
  /**
   * Calls of the current batch that have not come to their approval point yet (a decision for one is
   * kept until it asks: an Update can be validated in the workflow task that also brings the activity
   * result the call waits behind, before the code that would start its wait has run).
   */
  isCallAhead(toolCallId: string): boolean {
    return this.callsAhead.has(toolCallId);
  }
  /** The decision sent for a call that has not asked yet, kept until it does. */
  decisionAhead(toolCallId: string): Readonly<ApprovalDecisionInput> | undefined {
    return this.decisionsAhead.get(toolCallId);
  }

  // The loop.

  /** A model turn starts (the checkpoint is behind it). */
  startTurn(): void {
    this.now.phase = 'model';
    this.live.turnStarted();
  }

  /**
   * A model step answered: the turn is counted, the context fingerprint moves past the reply, its
   * usage (failed attempts included: cost durability) and request go into the ledger with the
   * clear batch it carried, the tail is sent.
   */
  recordReply(reply: ModelStepResult): void {
    const { state } = this;
    state.turn += 1;
    state.steps += 1;
    // A resumed paused turn sends no tail: its reply joins the paused message.
    state.messages += state.tail.length === 0 ? 0 : 2;
    state.lastReplyId = reply.message.id;
    state.usage = addUsage(addUsage(state.usage, reply.usage), reply.failedAttemptsUsage ?? ZERO_USAGE);
    state.tail = [];
    const text = replyText(reply);
    if (text) state.finalText = text;
    this.now.lastTurnOutcome = turnOutcome(state.turn, reply);
    // The clear batch the answered request carried (a reactive compaction drops the planned one).
    const clear = this.now.nextClear;
    const next = contextAfterReply(state.context, reply, clear);
    if (next.cleared) ledgerClearBatch(state.ledger, next.cleared);
    ledgerModelRequest(state.ledger, reply.usage, {
      batch: clear !== undefined,
      firstAfterCompaction: state.context.afterCompaction,
    });
    state.context = next.context;
    if (next.finalText !== undefined) state.finalText = next.finalText;
  }

  /** A reply that ran no tool goes on with another request (`stop-reasons.ts`). */
  continueReply(next: ReplyContinuation): void {
    const { context } = this.state;
    if (next.counted) context.continuations += 1;
    if (next.resumePause) context.resumePause = true;
    if (next.compaction) context.requested = next.compaction;
    this.state.tail = next.tail;
  }

  /** The reply's tool calls are about to run. */
  startToolBatch(calls: readonly ToolUseBlock[]): void {
    this.now.phase = 'tools';
    this.outcomes.clear();
    for (const call of calls) {
      this.seenCalls.add(call.id);
      this.callsAhead.add(call.id);
    }
  }

  /** The call has its result (it asked first, or ran or was refused without asking). */
  callReached(toolCallId: string): void {
    this.callsAhead.delete(toolCallId);
  }

  /** An activity, child workflow or compaction was scheduled for the operation. */
  countStep(): void {
    this.state.steps += 1;
  }

  /** The tool call the operation shows as its last (current details, status). */
  showTool(tool: LastTool): void {
    this.now.lastTool = tool;
  }

  /** A hands tool call finished: its outcome (spill sizes for the ledger) and the egress it made. */
  recordToolOutcome(toolCallId: string, outcome: ToolOutcome): void {
    this.outcomes.set(toolCallId, outcome);
    if (outcome.egress) this.state.egress = addEgress(this.state.egress ?? EMPTY_EGRESS, outcome.egress);
  }

  /** The batch's results are the next tail; the context tracks them from the next request on. */
  recordToolResults(results: TailBlock[]): void {
    const { state } = this;
    this.callsAhead.clear();
    state.tail = results;
    for (const result of trackedResults(state.turn, results, this.outcomes)) {
      if (worthTracking(result)) state.context.results.push(result);
      ledgerToolResult(state.ledger, result.spillExtra);
    }
  }

  /** The loop detector looked at the batch: its window is carried, its note (if any) joins the tail. */
  recordLoopCheck(verdict: LoopVerdict): void {
    this.state.loop = verdict.window;
    if (verdict.note) this.state.tail.push({ type: 'text', text: verdict.note });
  }

  /** The operation's one terminal state. */
  end(ended: OperationEnd): void {
    this.now.ended = ended;
  }

  beginFinishing(): void {
    this.now.phase = 'finishing';
  }

  markDone(): void {
    this.now.phase = 'done';
  }

  /** The carry the next run starts from (continue-as-new), with the live stream's state. */
  carryOver(): OperationCarry {
    this.state.live = this.live.state();
    // Carries of older runs tracked every result.
    this.state.context.results = this.state.context.results.filter(worthTracking);
    return this.state;
  }

  // The context window (`compaction.ts`).

  requestCompaction(reason: CompactionReason): void {
    this.state.context.requested = reason;
  }

  /** A compaction asked for with nothing to compact yet (too few turns) is dropped. */
  dropCompactionRequest(): void {
    this.state.context.requested = null;
  }

  /** The clear batch the next model step carries (none: `undefined`). */
  setClearBatch(clear: ContextClear | undefined): void {
    this.now.nextClear = clear;
  }

  startCompaction(): void {
    this.now.phase = 'compacting';
    this.state.steps += 1;
  }

  /** A compaction finished: its usage, the compacted context, the results that left it. */
  recordCompaction(result: CompactContextResult): void {
    const { state } = this;
    state.usage = addUsage(addUsage(state.usage, result.usage), result.failedAttemptsUsage ?? ZERO_USAGE);
    const next = contextAfterCompaction(state.context, state.turn, this.settings.context.keepTurns, result);
    ledgerCompaction(state.ledger, result, next.dropped);
    state.context = next.context;
    state.messages = result.context.messages;
    state.lastReplyId = result.context.lastReplyId;
  }

  /** A model or compaction call finally failed: what its attempts were billed counts all the same. */
  billFailedCall(usage: TokenUsage, kind: 'model' | 'compaction'): void {
    this.state.usage = addUsage(this.state.usage, usage);
    ledgerFailedStep(this.state.ledger, usage, kind);
  }

  /**
   * A reply nothing acts on (asked before the repository's check answered, `seed-check.ts`): its
   * tokens are billed as a failed call's, and the turn is asked again.
   */
  voidReply(reply: ModelStepResult): void {
    this.billFailedCall(addUsage(reply.usage, reply.failedAttemptsUsage ?? ZERO_USAGE), 'model');
    this.now.voidReplies = (this.now.voidReplies ?? 0) + 1;
  }

  /** How many replies were voided in this run (`voidReply`). */
  get voidReplies(): number {
    return this.now.voidReplies ?? 0;
  }

  /** The model turn goes on after a reactive compaction. */
  resumeModelTurn(): void {
    this.now.phase = 'model';
  }

  // Steering, facts, abort.

  /** Queues steering for the next checkpoint; returns its place in the queue. */
  acceptSteering(text: string): number {
    this.state.pendingSteering.push(text);
    return this.state.pendingSteering.length;
  }

  /** A session fact arrived: a later write of the same key replaces one the model has not seen yet. */
  receiveFact(key: string, value: string): void {
    const pending = (this.state.pendingFacts ?? []).filter((text) => !text.startsWith(factNote(key, '')));
    this.state.pendingFacts = [...pending, factNote(key, value)];
  }

  /**
   * Checkpoint: queued steering joins the tail, after any tool results. Changed session facts join
   * it too (before the steering), but only when a request follows anyway: a fact alone never costs a turn.
   */
  enterSteering(): void {
    const { state } = this;
    const steering = state.pendingSteering.splice(0).map(steeringNote);
    const facts = state.tail.length > 0 || steering.length > 0 ? (state.pendingFacts?.splice(0) ?? []) : [];
    for (const text of [...facts, ...steering]) state.tail.push({ type: 'text', text });
  }

  acceptAbort(reason: string): void {
    this.now.abortReason = reason;
  }

  /** The workflow was cancelled while a step ran: an abort, unless one was already accepted. */
  noteCancelled(): void {
    this.now.abortReason ??= 'cancelled';
  }

  // Approvals (`approvals.ts`).

  awaitApproval(waiting: WaitingApproval): void {
    this.callsAhead.delete(waiting.toolCallId);
    this.now.waitingApproval = waiting;
    this.now.approvalDecision = undefined;
  }

  decideApproval(decision: ApprovalDecisionInput): void {
    this.now.approvalDecision = decision;
  }

  /** A decision came for a call that has not asked yet; `undefined` once it is applied or void. */
  keepDecisionAhead(toolCallId: string, decision: ApprovalDecisionInput | undefined): void {
    if (decision) this.decisionsAhead.set(toolCallId, decision);
    else this.decisionsAhead.delete(toolCallId);
  }

  /** The waiting call was decided (by a person, the timeout or an abort). */
  closeApproval(toolCallId: string, outcome: 'approved' | 'denied'): void {
    this.state.approvalsDecided = [...(this.state.approvalsDecided ?? []), { toolCallId, decision: outcome }].slice(
      -DECIDED_KEPT,
    );
    this.now.waitingApproval = undefined;
    this.now.approvalDecision = undefined;
  }

  // Budgets that ask (`budget.ts`).

  /** A spent budget asks a person: its number among the run's asks (its approval id is `budget-<n>`). */
  askForBudget(): number {
    const asks = (this.state.budgetAsks ??= { asked: 0, added: {} });
    asks.asked += 1;
    return asks.asked;
  }

  /** A person approved a budget's extension: what approvals have added to the limits now. */
  extendBudget(asks: BudgetAsks): void {
    this.state.budgetAsks = asks;
  }

  // The sandbox and where it is (`sandbox.ts`, `sandbox-lease.ts`).

  useSandbox(): void {
    this.state.sandboxUsed = true;
  }

  markSeeded(): void {
    this.state.seeded = true;
  }

  /** The workspace's environment as the hands host prepared it (or found it, for a workspace made earlier). */
  recordEnvironment(environment: PreparedEnvironment): void {
    this.state.environment = environment;
  }

  /** The environment's update commands ran (or had run) in the workspace. */
  markWorkspaceSetUp(): void {
    this.state.workspaceSetUp = true;
  }

  /** The environment could not be prepared (a wrong definition, a failing step): the operation ends failed. */
  failEnvironment(reason: string): void {
    this.now.environmentFailure = reason;
  }

  /** The workspace is on this hands host (claimed, or named by the session's lease). */
  claimHandsHost(host: HandsHost): void {
    this.state.handsHost = host;
  }

  /** The hands host was given up: the next call claims another and seeds a new workspace. */
  giveUpHandsHost(): void {
    this.state.handsHost = undefined;
    this.state.seeded = false;
    // The next host makes a new workspace: its environment is prepared (and set up) there again.
    this.state.environment = undefined;
    this.state.workspaceSetUp = undefined;
  }

  // Checkpoints (`checkpoints.ts`).

  /** A checkpoint was recorded — or skipped, when the sandbox cannot record one (then none is tried again). */
  recordCheckpoint(turn: number, outcome: CheckpointResult): void {
    const checkpoints = (this.state.checkpoints ??= { taken: 0 });
    checkpoints.tried = turn;
    if (isSkipped(outcome)) {
      checkpoints.skipped = outcome.skipped;
      return;
    }
    checkpoints.taken += 1;
    checkpoints.last = { turn, commit: outcome.commit };
  }

  /** A checkpoint could not be recorded: counted, and the operation goes on without it. */
  recordCheckpointFailure(turn: number, reason: string): void {
    const checkpoints = (this.state.checkpoints ??= { taken: 0 });
    checkpoints.tried = turn;
    checkpoints.failed = (checkpoints.failed ?? 0) + 1;
    checkpoints.lastFailure = reason;
  }

  // Subagents and MCP tools.

  startSubagent(): void {
    this.state.subagents = (this.state.subagents ?? 0) + 1;
  }

  /** A subagent ended: its usage is the operation's too, and the host it claimed first is the workspace's. */
  recordSubagentResult(result: OperationResult): void {
    this.state.usage = addUsage(this.state.usage, result.usage);
    if (result.handsRoute && !this.state.handsHost) this.state.handsHost = result.handsRoute;
  }

  recordMcpTools(catalogue: McpCatalogue): void {
    this.state.mcp = catalogue;
  }

  // Hooks (`hooks.ts`).

  /** The repository's own hooks, as the seed check read them. */
  recordRepositoryHooks(hooks: HookSettings): void {
    this.state.repositoryHooks = hooks;
  }

  /** A hook decided (shown in the details). */
  recordHookDecision(last: LastHook): void {
    this.now.lastHook = last;
  }

  /** Text from SessionStart hooks: in the first message, before the goal (only before the first turn). */
  addContextBeforeGoal(texts: readonly string[]): void {
    const { tail } = this.state;
    tail.splice(Math.max(0, tail.length - 1), 0, ...texts.map((text): TailBlock => ({ type: 'text', text })));
  }

  /** Text from hooks (UserPromptSubmit, PreCompact) at the end of the next message. */
  addContext(texts: readonly string[]): void {
    for (const text of texts) this.state.tail.push({ type: 'text', text });
  }

  /** A Stop hook refused the end: the model continues with the reason as the next message. */
  refuseStop(reason: string): void {
    this.state.stopBlocks = (this.state.stopBlocks ?? 0) + 1;
    this.state.tail = [{ type: 'text', text: stopRefusalNote(reason) }];
  }

  // Waiting and stuck (`stuck.ts`).

  startWaiting(what: string): void {
    this.now.waitingFor = what;
  }

  /** The wait for `what` is over (unless another began meanwhile). */
  stopWaiting(what: string): void {
    if (this.now.waitingFor === what) this.now.waitingFor = undefined;
  }

  /** Sets or clears the stuck verdict; true when what it says changed. */
  markStuck(stuck: StuckState | undefined): boolean {
    const changed = this.now.stuck?.reason !== stuck?.reason || this.now.stuck?.lastFailure !== stuck?.lastFailure;
    this.now.stuck = stuck;
    return changed;
  }
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

/** The heartbeat override of every activity of the operation (`heartbeatTimeoutMs`), if set. */
export function heartbeatOverride(op: OperationRun): { heartbeatTimeout?: number } {
  return op.settings.heartbeatTimeoutMs === undefined ? {} : { heartbeatTimeout: op.settings.heartbeatTimeoutMs };
}
