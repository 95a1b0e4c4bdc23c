/**
 * `operation`: one accepted request, run as the agent loop
 * checkpoint → model turn → tool batch → checkpoint → … until the model ends its turn with nothing
 * queued, a budget ends it, or someone aborts it. Exactly one terminal state:
 *  - `completed` (the workflow returns its result),
 *  - `failed` (the workflow fails with an `OperationFailed` ApplicationFailure carrying the result),
 *  - `aborted` (the workflow returns its result).
 *
 * The workflow keeps no transcript: model turns send a context fingerprint and the new tail
 * (`model-turn.ts`); tool calls run on the hands queue, one activity per call (`tool-calls.ts`).
 * Steering is accepted durably by an Update and enters the context at the next checkpoint, at its
 * tail (`steering.ts`). The state every step works on is one `OperationRun` (`state.ts`).
 *
 * Run by a session (`../session/session.ts`), an operation is one step of a lane: it may continue the lane's
 * conversation (`continues`), uses the session's sandbox under its lease, hears changed facts, and
 * its result says where the lane's next operation continues (`context`, `openToolResults`,
 * `pendingNotes`). Started alone (`temporal workflow start --type operation`) it is a session of one
 * operation that owns its sandbox. Tool calls may wait for approval (`approvals.ts`); the `task`
 * tool runs subagent operations as children (`subagents.ts`).
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  workflowInfo,
} from '@temporalio/workflow';
import { foldPatches, isPatched } from '../shared/patches';
import { COMPACT_CONTEXT_ACTIVITY } from '../../common/context';
import type { ModelStepResult } from '../../common/model-step';
import type { TextBlockParam, ToolResultBlockParam, ToolUseBlock } from '../../common/model-types';
import { parseOperationInput, type OperationResult, type OperationSettings } from '../../common/operation';
import { costUsd } from '../../common/pricing';
import { volumeNameOf } from '../../common/sandbox-names';
import { acceptApprovals } from './approvals';
import { deadlineSpent, endUnlessExtended, spentBudget, startDeadline } from './budget';
import { checkpointAfterBatch, checkpointBeforeBatch } from './checkpoints';
import { acceptContextUpdates, keepContextInWindow, modelTurnWithinWindow } from './compaction';
import { laneContextOf, modelOf, operationTokens } from './context-window';
import { publishReply } from './model-turn';
import { toolCallsOf } from './reply';
import { OperationEnd, OperationRun, steeringNote, type OperationCarry, type ReplyContinuation } from './state';
import { provisionSandbox, type OperationSandbox } from './sandbox';
import { listenToSession, reportAbortToSession } from './session-link';
import { acceptSteeringAndAbort } from './steering';
import { actOnCutToolCalls, actOnStopReason, STOP_REASONS_PATCH } from './stop-reasons';
import { runToolBatch } from './tool-calls';
import { checkForLoop } from './loop-detector';
import { listMcpTools } from './mcp-tools';
import { ABORTED, beforeCompaction, refusalToStop, runStartHooks } from './hooks';
import { checkBeforeFirstRequest, SEED_CHECK_AFTER_FIRST_REPLY_PATCH, SeedCheck, startHooksOn } from './seed-check';
import { stuckDetectionOn } from './stuck';
import {
  answerStatusQuery,
  countersDue,
  keepDetails,
  publishRejectedInput,
  publishSearchAttributes,
  showDetails,
} from './visibility';

export type { OperationCarry } from './state';

export async function operation(rawInput: unknown, carry?: OperationCarry): Promise<OperationResult> {
  foldPatches();
  const op = new OperationRun(validSettings(rawInput), carry);
  const loopScope = new CancellationScope();
  answerStatusQuery(op);
  acceptSteeringAndAbort(op, () => {
    loopScope.cancel();
    reportAbortToSession(op);
  });
  acceptContextUpdates(op);
  acceptApprovals(op);
  listenToSession(op);
  publishSearchAttributes(op, 'state');
  showDetails(op);
  startDeadline(op);
  const sandbox = provisionSandbox(op);
  if (isPatched(SEED_CHECK_AFTER_FIRST_REPLY_PATCH)) {
    // The first model request does not wait for the repository's check (`seed-check.ts`).
    const check = new SeedCheck(sandbox);
    const refused = checkBeforeFirstRequest(op) ? await check.run() : undefined;
    try {
      const end = refused ?? (await loopScope.run(() => agentLoop(op, sandbox, rawInput, check)));
      op.end((await check.run()) ?? end);
    } catch (err) {
      const cancelled = isCancellation(err) || op.abortReason !== undefined;
      op.end((cancelled ? undefined : await check.run()) ?? endOfFailedLoop(op, err));
    }
    return finish(op, sandbox);
  }
  const refused = await sandbox.checkSeedSource();
  if (!refused) sandbox.startEagerly();

  try {
    op.end(refused ?? (await loopScope.run(() => agentLoop(op, sandbox, rawInput))));
  } catch (err) {
    op.end(endOfFailedLoop(op, err));
  }
  return finish(op, sandbox);
}

async function agentLoop(
  op: OperationRun,
  sandbox: OperationSandbox,
  rawInput: unknown,
  seedCheck?: SeedCheck,
): Promise<OperationEnd> {
  const { carry } = op;
  // MCP tools are listed once, before the first turn; without `mcpServers` nothing is scheduled.
  const mcpFailed = await listMcpTools(op);
  if (mcpFailed) return mcpFailed;
  // hooks: SessionStart and UserPromptSubmit, once; without hooks nothing is scheduled.
  const refused = await runStartHooks(op, sandbox);
  if (refused) return refused;
  for (;;) {
    op.enterSteering();
    if (carry.tail.length === 0 && !carry.context.resumePause) return new OperationEnd('completed', 'end_turn');
    const overBudget = spentBudget(op);
    if (overBudget) {
      const end = await endUnlessExtended(op, overBudget);
      if (end) return end;
      continue;
    }
    if (workflowInfo().continueAsNewSuggested) {
      op.live.detach();
      await condition(allHandlersFinished);
      await continueAsNew<typeof operation>(rawInput, op.carryOver());
    }
    // A step the deadline cut short is run again once a person extends the deadline.
    if (!(await keepContextInWindow(op, beforeCompaction(op, sandbox)))) {
      const end = await endUnlessExtended(op, deadlineSpent(op));
      if (end) return end;
      continue;
    }

    op.startTurn();
    showDetails(op);
    const reply = await modelTurnWithinWindow(op);
    if (reply === undefined) {
      const end = await endUnlessExtended(op, deadlineSpent(op));
      if (end) return end;
      continue;
    }
    if (seedCheck && !seedCheck.started) {
      // The first reply waits for the repository's check before anything acts on it (`seed-check.ts`).
      const refusedRepository = await seedCheck.run();
      if (refusedRepository || startHooksOn(op)) op.voidReply(reply);
      if (refusedRepository) return refusedRepository;
      if (startHooksOn(op)) {
        // The repository's hooks add to the first message: the turn is asked again with their word.
        const refusedByHooks = await runStartHooks(op, sandbox);
        if (refusedByHooks) return refusedByHooks;
        continue;
      }
    }
    op.recordReply(reply);
    publishReply(op, reply);
    if (countersDue(op)) publishSearchAttributes(op, 'counters');

    const end = await actOnReply(op, sandbox, reply);
    if (end) return end;
    showDetails(op);
  }
}

/** The operation's settings from its input, or the workflow fails with `InvalidOperationInput` naming the field. */
function validSettings(rawInput: unknown): OperationSettings {
  const parsed = parseOperationInput(rawInput);
  if (parsed.ok) return parsed.value;
  publishRejectedInput();
  throw ApplicationFailure.nonRetryable(`invalid operation input: ${parsed.error}`, 'InvalidOperationInput');
}

/** Runs the reply's tool batch (its results become the next tail), or says how the operation ends. */
async function actOnReply(
  op: OperationRun,
  sandbox: OperationSandbox,
  reply: ModelStepResult,
): Promise<OperationEnd | undefined> {
  const calls = toolCallsOf(reply);
  const cut =
    reply.stopReason === 'max_tokens' ||
    (reply.stopReason === 'model_context_window_exceeded' && isPatched(STOP_REASONS_PATCH));
  if (calls.length > 0 && cut) return goOn(op, actOnCutToolCalls(op, reply, calls));
  if (calls.length > 0) {
    op.startToolBatch(calls);
    showDetails(op);
    await checkpointBeforeBatch(op, sandbox, calls);
    op.recordToolResults(await runToolBatch(op, sandbox, calls));
    if (op.abortReason !== undefined) return new OperationEnd('aborted', `aborted: ${op.abortReason}`);
    // A workspace whose environment cannot be made is not the model's to fix: its definition is.
    if (op.environmentFailure) return new OperationEnd('failed', op.environmentFailure);
    await checkpointAfterBatch(op, sandbox, calls);
    return stuckDetectionOn() ? loopEnd(op, calls) : undefined;
  }
  const after = actOnStopReason(op, reply);
  if (after instanceof OperationEnd && after.state === 'completed') {
    // hooks: a Stop hook may refuse the end; the model then goes on with its reason.
    const refusal = await refusalToStop(op, sandbox);
    if (refusal === ABORTED) return new OperationEnd('aborted', `aborted: ${op.abortReason ?? 'workflow cancelled'}`);
    if (refusal !== undefined) {
      op.refuseStop(refusal);
      return undefined;
    }
  }
  return goOn(op, after);
}

/** Applies the stop reasons' continuation of a reply, if any; returns the end, if any. */
function goOn(op: OperationRun, next: OperationEnd | ReplyContinuation | undefined): OperationEnd | undefined {
  if (next === undefined || next instanceof OperationEnd) return next;
  op.continueReply(next);
  return undefined;
}

/** Applies the loop detector's verdict on the batch just run: a note at the tail, or the end of a stuck operation. */
function loopEnd(op: OperationRun, calls: ToolUseBlock[]): OperationEnd | undefined {
  const verdict = checkForLoop(op.carry.loop, calls, op.carry.tail, op.settings.stuck);
  op.recordLoopCheck(verdict);
  return verdict.stuck === undefined ? undefined : new OperationEnd('failed', `stuck: ${verdict.stuck}`);
}

/** How an exception out of the loop ends the operation: an abort, or a model step that finally failed. */
function endOfFailedLoop(op: OperationRun, err: unknown): OperationEnd {
  if (isCancellation(err) || op.abortReason !== undefined) {
    return new OperationEnd('aborted', `aborted: ${op.abortReason ?? 'workflow cancelled'}`);
  }
  if (err instanceof ActivityFailure) {
    const cause = err.cause;
    const type = cause instanceof ApplicationFailure && cause.type ? ` [${cause.type}]` : '';
    const step = err.activityType === COMPACT_CONTEXT_ACTIVITY ? 'compaction' : 'model step';
    return new OperationEnd('failed', `${step} failed${type}: ${cause?.message ?? err.message}`);
  }
  throw err;
}

/** Tears the sandbox down, publishes the terminal state and returns (or, when failed, throws) the result. */
async function finish(op: OperationRun, sandbox: OperationSandbox): Promise<OperationResult> {
  const ended = op.ended!;
  op.beginFinishing();
  showDetails(op);
  await sandbox.teardown();
  op.markDone();
  publishSearchAttributes(op, 'state');
  showDetails(op);
  op.live.publish(op.carry.turn, { kind: 'operation.ended', state: ended.state, reason: ended.reason });
  // Parked followers get the last events before the workflow closes. Not cancellable: a cancelled
  // operation (its parent's abort) still returns its result, which carries what it used.
  op.live.detach();
  await CancellationScope.nonCancellable(() => condition(allHandlersFinished));

  const { carry } = op;
  const result: OperationResult = {
    state: ended.state,
    reason: ended.reason,
    turns: carry.turn,
    steps: carry.steps,
    usage: carry.usage,
    costUsd: costUsd(carry.usage, modelOf(op)),
    finalText: carry.finalText,
    sessionId: op.sessionId,
    workspaceVolume: volumeNameOf(op.sessionId, carry.handsHost?.namePrefix),
    openToolResults: carry.tail.filter((block): block is ToolResultBlockParam => block.type === 'tool_result'),
    ...keepDetails(op),
    ...(carry.handsHost ? { handsRoute: carry.handsHost } : {}),
    tokens: operationTokens(op),
    ...(carry.egress ? { egress: carry.egress } : {}),
    ...(carry.environment ? { environment: carry.environment } : {}),
    lane: op.settings.lane,
    context: laneContextOf(op),
    pendingNotes: [
      ...carry.tail.filter((block): block is TextBlockParam => block.type === 'text').map((block) => block.text),
      ...(carry.pendingFacts ?? []),
      ...carry.pendingSteering.map(steeringNote),
    ],
  };
  if (ended.state === 'failed') {
    throw ApplicationFailure.create({
      type: 'OperationFailed',
      message: ended.reason,
      nonRetryable: true,
      details: [result],
    });
  }
  return result;
}
