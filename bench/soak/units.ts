/**
 * The soak's units of work and how each is driven from submission to its end, as a client of the
 * harness would: operations (plain, with an approval asked for, with hooks, aborted on purpose, over
 * their turn budget, with egress to a local server), a session with two lanes of two prompts each,
 * and a coding task. Every call to Temporal is retried until it gets an answer, so a fault on the
 * client's side (the history service down) loses nothing: a start is idempotent (the workflow id,
 * or the prompt's Update id), and a unit counts as accepted once the harness said so.
 */
import { WorkflowFailedError, WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { decideToolCall } from '../../client/approvals';
import { Refused, submitPrompt } from '../../client/session';
import { CODING_TASK_FAILURES, CODING_TASK_WORKFLOW_TYPE, type CodingTaskInput } from '../../common/coding-task';
import { addUsage, ZERO_USAGE, type TokenUsage } from '../../common/model-types';
import {
  abortUpdate,
  OPERATION_WORKFLOW_TYPE,
  statusQuery,
  type OperationInput,
  type OperationResult,
} from '../../common/operation';
import { sessionIdFor } from '../../common/sandbox-names';
import { sessionStatusQuery, sessionWorkflowId } from '../../common/session';
import type { HooksInput } from '../../common/hooks';
import { ASK_MARK, HOOKS_LOG, promptTag, taskBranch, toolIdOf } from './model';
import type { UnitKind } from './schedule';

export type EndState = 'completed' | 'failed' | 'aborted';

/** One operation of a unit, as it ended. */
export interface OperationOutcome {
  id: string;
  state: EndState;
  reason: string;
  usage: TokenUsage;
  handsHost?: string;
}

/** A unit of work: what was asked, when, and how it ended. */
export interface UnitRecord {
  id: string;
  kind: UnitKind;
  slot: number;
  /** Its sandboxes' session ids (an operation's own, the session's, the task's). */
  sandboxes: string[];
  /** Epoch ms: submitted (first try), accepted (the harness said so), ended (its result read). */
  submittedAt: number;
  acceptedAt?: number;
  endedAt?: number;
  state?: EndState;
  reason?: string;
  /** The state its kind ends in when nothing goes wrong (an abort unit: aborted). */
  expected: EndState;
  /** The tokens the harness recorded for it (its operations', or the task's). */
  usage: TokenUsage;
  operations: OperationOutcome[];
  /** An approval unit's decision. */
  approval?: 'approved' | 'denied';
  /** Tool calls that must never run (a denied call, a turn over the budget). */
  forbiddenCalls: string[];
  /** Why the driver could not follow the unit to its end (it is then lost). */
  error?: string;
}

export interface UnitContext {
  client: Client;
  brainQueue: string;
  handsQueue: string;
  /** The textkit repository coding tasks work on (`file://…`). */
  remoteUrl: string;
  /** `host:port` of the egress units' stand-in server. */
  egressHost: string;
  /** After this (epoch ms) a call that keeps failing gives up and the unit is lost. */
  giveUpAt: () => number;
  log: (line: string) => void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Calls `fn` until it answers: a Temporal call that fails (the frontend or history down, a workflow
 * not started yet) is tried again every second, until the unit's deadline.
 */
export async function persist<T>(ctx: UnitContext, what: string, fn: () => Promise<T>): Promise<T> {
  let logged = 0;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof Refused || err instanceof WorkflowFailedError) throw err;
      if (Date.now() > ctx.giveUpAt()) throw new Error(`${what}: gave up: ${(err as Error).message}`);
      if (Date.now() - logged > 60_000) {
        logged = Date.now();
        ctx.log(`${what}: ${(err as Error).message.split('\n')[0]} (trying again)`);
      }
      await sleep(1_000);
    }
  }
}

/** Starts a workflow once: a retry finds it running (USE_EXISTING) or already closed (accepted before). */
async function startOnce(ctx: UnitContext, type: string, id: string, input: object): Promise<WorkflowHandle> {
  return persist(ctx, `start ${id}`, async () => {
    try {
      return await ctx.client.workflow.start(type, {
        taskQueue: ctx.brainQueue,
        workflowId: id,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return ctx.client.workflow.getHandle(id);
      throw err;
    }
  });
}

/** An operation's result, however it ended; a workflow that failed without one is a failure with its message. */
async function operationOutcome(ctx: UnitContext, id: string): Promise<OperationOutcome> {
  const handle = ctx.client.workflow.getHandle(id);
  const result = await persist(ctx, `result of ${id}`, async () => {
    try {
      return (await handle.result()) as OperationResult;
    } catch (err) {
      if (err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure) {
        if (err.cause.type === 'OperationFailed' && err.cause.details?.[0])
          return err.cause.details[0] as OperationResult;
      }
      if (err instanceof WorkflowFailedError)
        return { failure: `workflow failed: ${err.cause?.message ?? err.message}` };
      if (err instanceof WorkflowNotFoundError) throw new Error(`${id} does not exist yet`);
      throw err;
    }
  });
  if ('failure' in result) return { id, state: 'failed', reason: result.failure, usage: { ...ZERO_USAGE } };
  return { id, state: result.state, reason: result.reason, usage: result.usage, handsHost: result.handsHost };
}

const HOOKS: HooksInput = {
  PreToolUse: [
    {
      matcher: 'bash',
      hooks: [
        {
          type: 'command',
          // The call's id, once per run of the hook: a `never` hook's effect.
          command: `grep -o '"tool_use_id":"[^"]*"' | cut -d'"' -f4 >> ${HOOKS_LOG}`,
          replay: 'never',
          timeout: 30,
        },
      ],
    },
  ],
  PostToolUse: [
    {
      matcher: 'write_file',
      hooks: [
        {
          type: 'command',
          command: `echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"soak hook: checked"}}'`,
          timeout: 30,
        },
      ],
    },
  ],
};

/** The input of a single-operation unit of `kind`. */
function operationInput(ctx: UnitContext, unit: UnitRecord): OperationInput {
  const base: OperationInput = { goal: promptTag(unit.id, unit.kind), handsTaskQueue: ctx.handsQueue };
  switch (unit.kind) {
    case 'approval':
      return { ...base, approvals: { [`bash:/${ASK_MARK}/`]: 'ask' } };
    case 'hook':
      return { ...base, hooks: HOOKS };
    case 'fail':
      return { ...base, budget: { maxTurns: 2 } };
    case 'egress':
      return { ...base, egress: { allow: [ctx.egressHost] } };
    default:
      return base;
  }
}

/** Polls the operation's status until `until` holds or it has ended; false when it ended first. */
async function waitForStatus(
  ctx: UnitContext,
  handle: WorkflowHandle,
  until: (status: Awaited<ReturnType<typeof queryStatus>>) => boolean,
): Promise<boolean> {
  for (;;) {
    const status = await persist(ctx, `status of ${handle.workflowId}`, () => queryStatus(handle));
    if (status === 'ended') return false;
    if (until(status)) return true;
    await sleep(500);
  }
}

async function queryStatus(handle: WorkflowHandle) {
  const description = await handle.describe();
  if (description.status.name !== 'RUNNING') return 'ended' as const;
  return handle.query(statusQuery);
}

/** An approval unit: the asked call is approved or denied (by its choice), as a person would. */
async function decide(ctx: UnitContext, unit: UnitRecord, handle: WorkflowHandle, choice: number): Promise<void> {
  const waiting = await waitForStatus(ctx, handle, (s) => s !== 'ended' && s.state === 'waiting-approval');
  if (!waiting) return;
  const approve = choice < 0.75;
  unit.approval = approve ? 'approved' : 'denied';
  const toolCallId = toolIdOf(unit.id, 0);
  if (!approve) unit.forbiddenCalls.push(toolCallId);
  await persist(ctx, `decide ${unit.id}`, async () => {
    try {
      await decideToolCall(ctx.client.workflow, {
        operationId: unit.id,
        toolCallId,
        approve,
        ...(approve ? {} : { reason: 'soak: denied on purpose' }),
      });
    } catch (err) {
      // Decided by an earlier try whose answer was lost, or the operation ended: either is an answer.
      if (err instanceof Refused && ['ApprovalAlreadyDecided', 'OperationEnded'].includes(err.type)) return;
      throw err;
    }
  });
}

/** An abort unit: aborted once its long command runs, after a short wait chosen by the plan. */
async function abortWhenRunning(ctx: UnitContext, handle: WorkflowHandle, choice: number): Promise<void> {
  const running = await waitForStatus(ctx, handle, (s) => s !== 'ended' && s.phase === 'tools');
  if (!running) return;
  await sleep(Math.round(choice * 3_000));
  await persist(ctx, `abort ${handle.workflowId}`, async () => {
    try {
      await handle.executeUpdate(abortUpdate, { args: [{ reason: 'soak: aborted on purpose' }] });
    } catch (err) {
      if ((await handle.describe()).status.name !== 'RUNNING') return;
      throw err;
    }
  });
}

async function runOperationUnit(ctx: UnitContext, unit: UnitRecord, choice: number): Promise<void> {
  const handle = await startOnce(ctx, OPERATION_WORKFLOW_TYPE, unit.id, operationInput(ctx, unit));
  unit.acceptedAt = Date.now();
  if (unit.kind === 'approval') await decide(ctx, unit, handle, choice);
  if (unit.kind === 'abort') await abortWhenRunning(ctx, handle, choice);
  if (unit.kind === 'fail') unit.forbiddenCalls.push(toolIdOf(unit.id, 2));
  unit.operations.push(await operationOutcome(ctx, unit.id));
}

const LANES = ['a', 'b'] as const;

/** A session: lanes a and b, each a prompt and a follow-up queued behind it (which continues its conversation). */
async function runSessionUnit(ctx: UnitContext, unit: UnitRecord): Promise<void> {
  const ids: string[] = [];
  for (const n of [1, 2])
    for (const lane of LANES) {
      const operationId = `${unit.id}.${lane}${n}`;
      await persist(ctx, `prompt ${operationId}`, () =>
        submitPrompt(ctx.client, {
          sessionId: unit.id,
          prompt: { prompt: promptTag(unit.id, 'session', { lane, n }), lane, operationId },
          session: { handsTaskQueue: ctx.handsQueue },
          taskQueue: ctx.brainQueue,
          updateId: `${operationId}-prompt`,
        }),
      );
      ids.push(operationId);
    }
  unit.acceptedAt = Date.now();
  for (const id of ids) unit.operations.push(await operationOutcome(ctx, id));
  // The session removes its container once idle; then it is ended (sessions live until someone does).
  const session = ctx.client.workflow.getHandle(sessionWorkflowId(unit.id));
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const status = await persist(ctx, `session ${unit.id}`, () => session.query(sessionStatusQuery));
    if (status.sandbox.state === 'removed' || status.sandbox.state === 'unused') break;
    await sleep(500);
  }
  await persist(ctx, `end session ${unit.id}`, async () => {
    if ((await session.describe()).status.name === 'RUNNING') await session.terminate('soak: the session is done');
  });
}

/** A coding task on textkit (three features), on its own branch. */
async function runTaskUnit(ctx: UnitContext, unit: UnitRecord): Promise<void> {
  const input: CodingTaskInput = {
    repo: { kind: 'git', url: ctx.remoteUrl },
    branch: taskBranch(unit.id),
    specPath: 'SPEC.md',
    verify: 'npm test',
    handsTaskQueue: ctx.handsQueue,
    egress: 'none',
    environment: 'default',
  };
  const handle = await startOnce(ctx, CODING_TASK_WORKFLOW_TYPE, unit.id, input);
  unit.acceptedAt = Date.now();
  const outcome = await persist(ctx, `result of ${unit.id}`, async () => {
    try {
      const result = (await handle.result()) as { state: EndState; reason: string; usage: TokenUsage };
      return { state: result.state, reason: result.reason, usage: result.usage };
    } catch (err) {
      if (err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure) {
        const details = err.cause.details?.[0] as { state: EndState; reason: string; usage: TokenUsage } | undefined;
        if (err.cause.type === CODING_TASK_FAILURES.failed && details)
          return { state: details.state, reason: details.reason, usage: details.usage };
      }
      if (err instanceof WorkflowFailedError)
        return {
          state: 'failed' as const,
          reason: `workflow failed: ${err.cause?.message ?? err.message}`,
          usage: { ...ZERO_USAGE },
        };
      throw err;
    }
  });
  unit.operations.push({ id: unit.id, ...outcome });
}

/** The sandboxes a unit's work uses (their session ids). */
export function sandboxesOf(kind: UnitKind, id: string): string[] {
  return kind === 'task' ? [sessionIdFor(`task-${id}`)] : [id];
}

export function expectedEnd(kind: UnitKind): EndState {
  return kind === 'abort' ? 'aborted' : kind === 'fail' ? 'failed' : 'completed';
}

/** Drives a unit to its end; records how it ended (or why it could not be followed: then it is lost). */
export async function runUnit(ctx: UnitContext, unit: UnitRecord, choice: number): Promise<void> {
  try {
    if (unit.kind === 'session') await runSessionUnit(ctx, unit);
    else if (unit.kind === 'task') await runTaskUnit(ctx, unit);
    else await runOperationUnit(ctx, unit, choice);
    unit.endedAt = Date.now();
    unit.usage = unit.operations.reduce((total, op) => addUsage(total, op.usage), { ...ZERO_USAGE });
    // A unit ends as its last operation did (a session's four must all complete: the first other state counts).
    const odd = unit.operations.find((op) => op.state !== 'completed');
    const last = odd ?? unit.operations[unit.operations.length - 1]!;
    unit.state = last.state;
    unit.reason = last.reason;
  } catch (err) {
    unit.error = (err as Error).message;
  }
}
