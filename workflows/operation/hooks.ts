/**
 * The operation's hooks (`common/hooks.ts`): its input's, then the repository's own (read with the
 * seed check where the hands worker allows them). Each matching hook is one `runHook` activity on
 * the hands host of the session's workspace, under the session's sandbox lease (id
 * `hook-<event>-<key>-<n>`, summary `hook PreToolUse: ./check.sh`), run one after the other in the
 * configured order; its result — the hook's decision — is in the history, so a replay never asks
 * it again, and the hands' journal keeps a retried attempt from running a `never` hook twice.
 *
 *  - `SessionStart`, `UserPromptSubmit`: once, before the first model turn; their context joins the
 *    first message (before the goal, after it); a refused prompt ends the operation `failed`.
 *  - `PreToolUse`: after the call is validated, before the approval policy: deny (the refusal is the
 *    result), ask (the call waits for a person), replace the input (checked like the model's).
 *  - `PostToolUse`: after a call ran: a refusal's reason or added context joins its result.
 *  - `Stop`: the model ends its turn: a refusal sends it back with the reason, at most
 *    `maxStopBlocks` times; after that Stop hooks no longer run in the operation.
 *  - `PreCompact`: before a compaction at a checkpoint: its context joins the tail (the summary
 *    sees it, and it stays after the compaction).
 *
 * An operation without hooks schedules nothing here: its commands are exactly those it had before
 * hooks existed. With hooks, the new commands are behind the `hooks` patch.
 */
import { ActivityFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import { isPatched } from '../shared/patches';
import {
  cutText,
  fnv1a,
  hasHooks,
  HOOK_EVENT_TEXT_MAX,
  hookDecisionOf,
  hookRunIdOf,
  hookSummary,
  hooksNameTool,
  matchingHooks,
  mergeHooks,
  type Hook,
  type HookDecision,
  type HookEventInput,
  type HookEventName,
  type HookRunResult,
  type HooksActivities,
  type HookSettings,
  type HookSubject,
} from '../../common/hooks';
import type { ToolResultBlockParam, ToolUseBlock } from '../../common/model-types';
import { WORKSPACE_ROOT } from '../../common/tools';
import { hookActivityOptions } from '../shared/policies';
import type { OperationSandbox } from './sandbox';
import { heartbeatOverride, OperationEnd, type OperationRun } from './state';
import { stuckDetectionOn, watchActivity } from './stuck';
import { toolResult } from './tool-result';
import { showDetails } from './visibility';

/** The `patched()` id of the hook runs (taken only by operations that have hooks). */
export const HOOKS_PATCH = 'hooks';

/** The operation's hooks: the input's, then the repository's. */
export function hooksOf(op: OperationRun): HookSettings | undefined {
  // The carry is read-only here; the merge makes new arrays and changes neither.
  return mergeHooks(op.settings.hooks, op.carry.repositoryHooks as HookSettings | undefined);
}

/** Whether hooks run for `event` in this operation (the first such check records the patch). */
export function hooksOn(op: OperationRun, event: HookEventName): boolean {
  return hasHooks(hooksOf(op), event) && isPatched(HOOKS_PATCH);
}

/** One place in the loop where hooks run. */
interface HookPoint {
  event: HookEventName;
  /** The run ids' middle part (`pre`, `stop`, …) and key (a tool call id, the operation and a counter). */
  kind: string;
  key: string;
  toolCallId?: string;
  toolName?: string;
}

type Outcome = { decision: HookDecision; cancelled?: undefined } | { cancelled: true; decision?: undefined };

const eventBase = (op: OperationRun) => ({
  session_id: op.sessionId,
  operation_id: op.operationId,
  lane: op.settings.lane,
  cwd: WORKSPACE_ROOT,
});

/** A key for the operation's own hook runs: unique in the session, whatever the operation id holds. */
const operationKey = (op: OperationRun): string => `${fnv1a(op.operationId)}${fnv1a(`:${op.operationId}`)}`;

/** Runs one hook as an activity on the workspace's hands host; its decision (its `onError` when it failed). */
async function runHook(
  op: OperationRun,
  sandbox: OperationSandbox,
  point: HookPoint,
  hook: Hook,
  index: number,
  input: HookEventInput,
): Promise<Outcome> {
  const hookRunId = hookRunIdOf(point.kind, point.key, index);
  const summary = hookSummary(point.event, hook);
  let result: HookRunResult | { verdict: { kind: 'error'; error: string } };
  try {
    result = await sandbox.use(() => {
      op.countStep();
      return sandbox.route.call((taskQueue) => {
        const { runHook: run } = proxyActivities<HooksActivities>({
          ...hookActivityOptions(hook),
          ...heartbeatOverride(op),
          taskQueue,
          activityId: hookRunId,
          summary,
        });
        const call = () =>
          run({
            sessionId: op.sessionId,
            operationId: op.operationId,
            hookRunId,
            event: point.event,
            hook,
            input,
            ...(point.toolCallId ? { toolCallId: point.toolCallId } : {}),
            ...(point.toolName ? { toolName: point.toolName } : {}),
          });
        const host = sandbox.route.host?.host;
        return stuckDetectionOn()
          ? watchActivity(op, { activityId: hookRunId, taskQueue, waitingOn: summary, host }, call)
          : call();
      });
    });
  } catch (err) {
    if (isCancellation(err) || op.abortReason !== undefined) {
      op.noteCancelled();
      return { cancelled: true };
    }
    const message = err instanceof ActivityFailure && err.cause ? err.cause.message : (err as Error).message;
    result = { verdict: { kind: 'error', error: `hook infrastructure error: ${message}` } };
  }
  const decision = hookDecisionOf(point.event, result.verdict, hook.onError);
  op.recordHookDecision({
    event: point.event,
    summary,
    decision,
    ...(point.toolCallId ? { toolCallId: point.toolCallId } : {}),
  });
  showDetails(op);
  return { decision };
}

/** Runs the hooks matching `subject` in order until one refuses (`refuses`); their decisions, or `cancelled`. */
async function runHooks(
  op: OperationRun,
  sandbox: OperationSandbox,
  point: HookPoint,
  subject: HookSubject,
  input: HookEventInput,
  refuses: (decision: HookDecision) => boolean,
): Promise<HookDecision[] | 'cancelled'> {
  const decisions: HookDecision[] = [];
  for (const [index, hook] of matchingHooks(hooksOf(op), point.event, subject).entries()) {
    const outcome = await runHook(op, sandbox, point, hook, index, input);
    if (outcome.cancelled) return 'cancelled';
    decisions.push(outcome.decision);
    if (refuses(outcome.decision)) break;
  }
  return decisions;
}

const blocked = (decision: HookDecision): boolean => decision.decision === 'block';
const contextOf = (decisions: HookDecision[]): string[] =>
  decisions.flatMap((decision) => (decision.context !== undefined ? [decision.context] : []));

/**
 * `SessionStart` and `UserPromptSubmit`, once before the first model turn: their context joins the
 * first message; how the operation ends when a hook refuses the prompt (or a failing one denies).
 */
export async function runStartHooks(op: OperationRun, sandbox: OperationSandbox): Promise<OperationEnd | undefined> {
  if (op.carry.runs > 1 || op.carry.turn > 0) return undefined;
  const key = operationKey(op);
  if (hooksOn(op, 'SessionStart')) {
    const source = op.settings.continues ? 'resume' : 'startup';
    const input: HookEventInput = { ...eventBase(op), hook_event_name: 'SessionStart', source };
    const point: HookPoint = { event: 'SessionStart', kind: 'start', key };
    const decisions = await runHooks(op, sandbox, point, { name: source }, input, blocked);
    if (decisions === 'cancelled') return abortedEnd(op);
    const refused = decisions.find(blocked);
    if (refused) return new OperationEnd('failed', refused.reason ?? 'a SessionStart hook failed');
    op.addContextBeforeGoal(contextOf(decisions).map((text) => `[SessionStart hook] ${text}`));
  }
  if (hooksOn(op, 'UserPromptSubmit')) {
    const prompt = cutText(op.settings.goal, HOOK_EVENT_TEXT_MAX);
    const input: HookEventInput = { ...eventBase(op), hook_event_name: 'UserPromptSubmit', prompt };
    const point: HookPoint = { event: 'UserPromptSubmit', kind: 'prompt', key };
    const decisions = await runHooks(op, sandbox, point, {}, input, blocked);
    if (decisions === 'cancelled') return abortedEnd(op);
    const refused = decisions.find(blocked);
    if (refused) return new OperationEnd('failed', `a UserPromptSubmit hook refused the prompt: ${refused.reason}`);
    op.addContext(contextOf(decisions).map((text) => `[UserPromptSubmit hook] ${text}`));
  }
  return undefined;
}

const abortedEnd = (op: OperationRun) =>
  new OperationEnd('aborted', `aborted: ${op.abortReason ?? 'workflow cancelled'}`);

/** What the PreToolUse hooks decided for one call. */
export interface ToolGate {
  /** The call is refused (or the operation was aborted): the result the model sees. */
  refusal?: ToolResultBlockParam;
  /** The input the call runs with instead of the model's (not yet checked against the tool's schema). */
  input?: unknown;
  /** A hook asks a person first: why. */
  ask?: string;
  /** Lines for the model, added to the call's result. */
  notes: string[];
}

/** `PreToolUse`: the hooks matching the call, in order; a later hook sees an earlier one's replaced input. */
export async function preToolUse(
  op: OperationRun,
  sandbox: OperationSandbox,
  call: ToolUseBlock,
  input: unknown,
  mainArgument: string,
): Promise<ToolGate> {
  const gate: ToolGate = { notes: [] };
  const point: HookPoint = { event: 'PreToolUse', kind: 'pre', key: call.id, toolCallId: call.id, toolName: call.name };
  let current = input;
  for (const [index, hook] of matchingHooks(hooksOf(op), 'PreToolUse', { name: call.name, mainArgument }).entries()) {
    const event: HookEventInput = {
      ...eventBase(op),
      hook_event_name: 'PreToolUse',
      tool_name: call.name,
      tool_input: current,
      tool_use_id: call.id,
    };
    const outcome = await runHook(op, sandbox, point, hook, index, event);
    if (outcome.cancelled) {
      return { ...gate, refusal: toolResult(call.id, `not run: the operation was aborted (${op.abortReason})`, true) };
    }
    const { decision } = outcome;
    if (decision.decision === 'deny') {
      const refusal = toolResult(
        call.id,
        `denied by a PreToolUse hook: ${decision.reason ?? 'no reason given'}. The call was not run. ` +
          'Do not send it again as it is; change your approach or explain what you need.',
        true,
      );
      return { ...gate, refusal };
    }
    if (decision.decision === 'ask') gate.ask = decision.reason ?? 'a PreToolUse hook asks a person first';
    if (decision.updatedInput) {
      current = decision.updatedInput;
      gate.input = current;
    }
    if (decision.context !== undefined) gate.notes.push(`[PreToolUse hook] ${decision.context}`);
  }
  if (gate.input !== undefined)
    gate.notes.unshift("[a PreToolUse hook replaced this call's input; the result is of the replaced call]");
  return gate;
}

/** `PostToolUse`: the hooks matching a call that ran; their refusals and context join its result. */
export async function postToolUse(
  op: OperationRun,
  sandbox: OperationSandbox,
  call: ToolUseBlock,
  input: unknown,
  mainArgument: string,
  result: ToolResultBlockParam,
): Promise<ToolResultBlockParam> {
  const event: HookEventInput = {
    ...eventBase(op),
    hook_event_name: 'PostToolUse',
    tool_name: call.name,
    tool_input: input,
    tool_use_id: call.id,
    tool_response: { content: cutText(textOf(result), HOOK_EVENT_TEXT_MAX), is_error: result.is_error === true },
  };
  const point: HookPoint = {
    event: 'PostToolUse',
    kind: 'post',
    key: call.id,
    toolCallId: call.id,
    toolName: call.name,
  };
  // A refusal here cannot undo the call: every matching hook runs, and each one's word reaches the model.
  const decisions = await runHooks(op, sandbox, point, { name: call.name, mainArgument }, event, () => false);
  if (decisions === 'cancelled') return result;
  const notes = decisions.flatMap((decision) => [
    ...(decision.decision === 'block' ? [`[PostToolUse hook] ${decision.reason ?? 'no reason given'}`] : []),
    ...(decision.context !== undefined ? [`[PostToolUse hook] ${decision.context}`] : []),
  ]);
  return withNotes(result, notes);
}

/** A call's result with lines for the model after its content. */
export function withNotes(result: ToolResultBlockParam, notes: readonly string[]): ToolResultBlockParam {
  if (notes.length === 0) return result;
  const text = notes.join('\n');
  if (typeof result.content === 'string' || result.content === undefined) {
    return { ...result, content: result.content ? `${result.content}\n\n${text}` : text };
  }
  return { ...result, content: [...result.content, { type: 'text', text }] };
}

function textOf(result: ToolResultBlockParam): string {
  if (typeof result.content === 'string') return result.content;
  return (result.content ?? []).map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join('\n');
}

/** What `refusalToStop` returns when the operation was aborted while its Stop hooks ran. */
export const ABORTED = Symbol('aborted');

/**
 * `Stop`: the model ends its turn. The reason the first refusing hook gives (the model then goes on
 * with it), undefined to end, or `ABORTED` when an abort came while the hooks ran. Once
 * `maxStopBlocks` refusals were made, Stop hooks no longer run (and nothing is scheduled).
 */
export async function refusalToStop(
  op: OperationRun,
  sandbox: OperationSandbox,
): Promise<string | typeof ABORTED | undefined> {
  const refusals = op.carry.stopBlocks ?? 0;
  if (refusals >= op.settings.maxStopBlocks || !hooksOn(op, 'Stop')) return undefined;
  const input: HookEventInput = {
    ...eventBase(op),
    hook_event_name: 'Stop',
    stop_hook_active: refusals > 0,
    last_assistant_message: cutText(op.carry.finalText, HOOK_EVENT_TEXT_MAX),
  };
  const point: HookPoint = { event: 'Stop', kind: 'stop', key: `${operationKey(op)}.${op.carry.turn}` };
  const decisions = await runHooks(op, sandbox, point, {}, input, blocked);
  if (decisions === 'cancelled' || op.abortReason !== undefined) return ABORTED;
  return decisions.find(blocked)?.reason;
}

/** `PreCompact`, before a compaction at a checkpoint: its context joins the tail. */
export function beforeCompaction(op: OperationRun, sandbox: OperationSandbox) {
  return async (reason: string): Promise<void> => {
    if (!hooksOn(op, 'PreCompact')) return;
    const trigger = reason === 'manual' ? 'manual' : 'auto';
    const input: HookEventInput = {
      ...eventBase(op),
      hook_event_name: 'PreCompact',
      trigger,
      custom_instructions: null,
    };
    const key = `${operationKey(op)}.${op.carry.context.compactions + 1}`;
    const point: HookPoint = { event: 'PreCompact', kind: 'compact', key };
    const decisions = await runHooks(op, sandbox, point, { name: trigger }, input, () => false);
    if (decisions === 'cancelled') return;
    op.addContext(contextOf(decisions).map((text) => `[PreCompact hook] ${text}`));
  };
}

/** Whether PreToolUse or PostToolUse hooks name a tool (by their matcher; input patterns decide per call). */
export function toolHooksFor(op: OperationRun, tool: string): boolean {
  const hooks = hooksOf(op);
  const named = hooksNameTool(hooks, 'PreToolUse', tool) || hooksNameTool(hooks, 'PostToolUse', tool);
  return named && isPatched(HOOKS_PATCH);
}

/** Whether tool hooks apply to one of these calls (the batch then runs its calls in order). */
export function toolHooksApply(op: OperationRun, calls: readonly ToolUseBlock[]): boolean {
  return calls.some((call) => toolHooksFor(op, call.name));
}
