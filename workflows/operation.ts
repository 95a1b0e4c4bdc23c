/**
 * `operation`: one accepted request, run as the agent loop
 * checkpoint → model step → tool batch → checkpoint → … until the model ends its turn with nothing
 * queued, a budget ends it, or someone aborts it. Exactly one terminal state:
 *  - `completed` (the workflow returns its result),
 *  - `failed` (the workflow fails with an `OperationFailed` ApplicationFailure carrying the result),
 *  - `aborted` (the workflow returns its result).
 *
 * The workflow keeps no transcript: model steps get a context fingerprint and the new tail (see
 * `common/model-step.ts`); tool calls run on the hands task queue, one activity per call with id
 * `tool-<tool_use_id>`. Steering is accepted durably by an Update and enters the context at the next
 * checkpoint, at its tail.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
  allHandlersFinished,
} from '@temporalio/workflow';
import type Anthropic from '@anthropic-ai/sdk';
import type { createBrainActivities } from '../activities/brain/activities';
import type { HandsActivities } from '../activities/hands/activities';
import type { ToolOutcome } from '../activities/hands/activities';
import type { ModelStepResult, TailBlock } from '../common/model-step';
import { addUsage, totalTokens, ZERO_USAGE, type TokenUsage } from '../common/model-types';
import {
  abortUpdate,
  OperationResult,
  OperationSettings,
  OperationStatus,
  parseOperationInput,
  statusQuery,
  steerUpdate,
  workspaceVolumeName,
} from '../common/operation';
import { costUsd } from '../common/pricing';
import { DEFAULT_SYSTEM_PROMPT } from '../common/prompts';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import { DEFAULT_HANDS_QUEUE } from '../common/task-queues';
import { replayPolicyOf, toolSummary, validateToolCall } from '../common/tools';
import { crashPoints } from './crash-point-sink';
import { MODEL_STEP_ACTIVITY_OPTIONS, toolActivityOptions, SANDBOX_ACTIVITY_OPTIONS } from './policies';

type BrainActivities = ReturnType<typeof createBrainActivities>;

/** State carried across continue-as-new: counters and references, never the transcript. */
export interface OperationCarry {
  turn: number;
  steps: number;
  usage: TokenUsage;
  messages: number;
  lastReplyId: string | null;
  tail: TailBlock[];
  pendingSteering: string[];
  sandboxUsed: boolean;
  seeded: boolean;
  startedAtMs: number;
  runs: number;
  finalText: string;
}

class OperationEnd {
  constructor(
    readonly state: 'completed' | 'failed' | 'aborted',
    readonly reason: string,
  ) {}
}

export async function operation(rawInput: unknown, carry?: OperationCarry): Promise<OperationResult> {
  const parsed = parseOperationInput(rawInput);
  if (!parsed.ok) {
    throw ApplicationFailure.nonRetryable(`invalid operation input: ${parsed.error}`, 'InvalidOperationInput');
  }
  const settings: OperationSettings = parsed.value;
  const operationId = workflowInfo().workflowId;
  const sessionId = settings.sessionId ?? sandboxIdFor(operationId);
  const handsQueue = settings.handsTaskQueue ?? DEFAULT_HANDS_QUEUE;

  const s: OperationCarry = carry ?? {
    turn: 0,
    steps: 0,
    usage: { ...ZERO_USAGE },
    messages: 0,
    lastReplyId: null,
    tail: [{ type: 'text', text: settings.goal }],
    pendingSteering: [],
    sandboxUsed: false,
    seeded: false,
    startedAtMs: Date.now(),
    runs: 0,
    finalText: '',
  };
  s.runs += 1;

  let phase: OperationStatus['phase'] = 'starting';
  let lastTool: OperationStatus['lastTool'];
  let abortReason: string | undefined;
  let ended: OperationEnd | undefined;
  const loopScope = new CancellationScope();

  const status = (): OperationStatus => ({
    state: ended?.state ?? 'running',
    sessionId,
    reason: ended?.reason,
    turn: s.turn,
    steps: s.steps,
    phase,
    lastTool,
    usage: s.usage,
    costUsd: costUsd(s.usage, settings.model),
    pendingSteering: s.pendingSteering.length,
    startedAt: new Date(s.startedAtMs).toISOString(),
    runs: s.runs,
  });
  setHandler(statusQuery, status);
  setHandler(
    steerUpdate,
    ({ text }) => {
      s.pendingSteering.push(text);
      crashPoints.reached('workflow: steering accepted');
      return { accepted: true, position: s.pendingSteering.length };
    },
    {
      validator: (arg) => {
        if (typeof arg?.text !== 'string' || !arg.text.trim()) throw new Error('text: must be a non-empty string');
        if (ended || abortReason !== undefined) throw new Error('the operation is no longer running');
      },
    },
  );
  setHandler(
    abortUpdate,
    ({ reason }) => {
      abortReason = reason?.trim() || 'requested by user';
      crashPoints.reached('workflow: abort accepted');
      loopScope.cancel();
      return { accepted: true };
    },
    {
      validator: (arg) => {
        if (arg?.reason !== undefined && typeof arg.reason !== 'string') throw new Error('reason: must be a string');
        if (ended) throw new Error(`the operation has already ended (${ended.state})`);
      },
    },
  );

  const heartbeat = settings.heartbeatTimeoutMs === undefined ? {} : { heartbeatTimeout: settings.heartbeatTimeoutMs };
  const { modelStep } = proxyActivities<BrainActivities>({ ...MODEL_STEP_ACTIVITY_OPTIONS, ...heartbeat });
  const sandbox = proxyActivities<HandsActivities>({
    ...SANDBOX_ACTIVITY_OPTIONS,
    ...heartbeat,
    taskQueue: handsQueue,
  });

  /** Search attributes: all of them when the state changes, only the counters after a turn. */
  const publish = (what: 'state' | 'counters'): void => {
    upsertSearchAttributes([
      ...(what === 'state'
        ? [
            { key: SEARCH_ATTRIBUTES.status, value: ended?.state ?? 'running' },
            { key: SEARCH_ATTRIBUTES.lane, value: settings.lane },
            { key: SEARCH_ATTRIBUTES.kind, value: 'run' },
            ...(settings.repo ? [{ key: SEARCH_ATTRIBUTES.repo, value: repoLabel(settings.repo) }] : []),
          ]
        : []),
      { key: SEARCH_ATTRIBUTES.turns, value: s.turn },
      { key: SEARCH_ATTRIBUTES.tokens, value: totalTokens(s.usage) },
      { key: SEARCH_ATTRIBUTES.costUsd, value: roundCost(costUsd(s.usage, settings.model)) },
    ]);
  };
  const details = (): void => {
    const st = status();
    setCurrentDetails(
      [
        `**${st.state}**${st.reason ? ` — ${st.reason}` : ''} · turn ${st.turn}/${settings.budget.maxTurns} · ${st.steps} steps`,
        `tokens: ${totalTokens(st.usage)} (input ${st.usage.input}, cache write ${st.usage.cacheWrite}, cache read ${st.usage.cacheRead}, output ${st.usage.output}) · $${st.costUsd.toFixed(4)}`,
        lastTool ? `last tool: \`${lastTool.summary}\`${lastTool.isError ? ' (error)' : ''}` : '',
        s.pendingSteering.length ? `steering queued: ${s.pendingSteering.length}` : '',
      ]
        .filter(Boolean)
        .join('\n\n'),
    );
  };
  publish('state');
  details();

  /** The workspace is ready for tools: seeded from the repository, if any (which creates the container). */
  const ensureWorkspace = async (): Promise<void> => {
    s.sandboxUsed = true;
    if (settings.repo && !s.seeded) {
      await sandbox.seedWorkspace({ sandboxId: sessionId, operationId, source: settings.repo });
      s.seeded = true;
    }
  };
  // Lazy by default: the first tool call provisions the sandbox, so the first model request never
  // waits for a container. Eager starts it alongside the first model call instead.
  const eager =
    settings.eagerSandbox && !s.sandboxUsed
      ? settings.repo
        ? ensureWorkspace()
        : sandbox.ensureSandbox({ sandboxId: sessionId, operationId }).then(() => void (s.sandboxUsed = true))
      : undefined;
  // An eager failure surfaces at the first tool call, which awaits the same promise.
  eager?.catch(() => undefined);

  const runToolBatch = async (toolUses: Anthropic.ToolUseBlock[]): Promise<TailBlock[]> => {
    const results: TailBlock[] = [];
    for (const call of toolUses) {
      if (abortReason !== undefined) {
        results.push(toolResult(call.id, `not run: the operation was aborted (${abortReason})`, true));
        continue;
      }
      const checked = validateToolCall(call.name, call.input);
      if (!checked.ok) {
        // An invalid call records no intent: the refusal is its result.
        results.push(toolResult(call.id, checked.error, true));
        lastTool = { name: call.name, summary: `${call.name}: invalid arguments`, isError: true };
        continue;
      }
      const summary = toolSummary(call.name, checked.input);
      lastTool = { name: call.name, summary };
      details();
      try {
        if (eager) await eager;
        else await ensureWorkspace();
        const requestedTimeout = requestedTimeoutMs(checked.input) ?? settings.toolTimeoutMs;
        const { runTool } = proxyActivities<HandsActivities>({
          ...toolActivityOptions(replayPolicyOf(call.name), requestedTimeout),
          ...heartbeat,
          taskQueue: handsQueue,
          activityId: `tool-${call.id}`,
          summary,
        });
        s.steps += 1;
        const outcome: ToolOutcome = await runTool({
          sandboxId: sessionId,
          operationId,
          toolCallId: call.id,
          name: call.name,
          input: checked.input,
          timeoutMs: requestedTimeout,
        });
        lastTool = { name: call.name, summary, isError: outcome.isError };
        results.push(toolResult(call.id, outcome.content, outcome.isError));
      } catch (err) {
        if (isCancellation(err) || abortReason !== undefined) {
          results.push(
            toolResult(
              call.id,
              `interrupted: the operation was aborted (${abortReason ?? 'cancelled'}) while this call ran; its process was stopped. The workspace is preserved.`,
              true,
            ),
          );
          abortReason ??= 'cancelled';
          continue;
        }
        // Retries exhausted or a non-retryable infrastructure failure: the model hears about it.
        const message = err instanceof ActivityFailure && err.cause ? err.cause.message : (err as Error).message;
        results.push(toolResult(call.id, `tool infrastructure error: ${message}`, true));
        lastTool = { name: call.name, summary, isError: true };
      }
    }
    return results;
  };

  const checkBudget = (): OperationEnd | undefined => {
    if (s.turn >= settings.budget.maxTurns)
      return new OperationEnd('failed', `budget: turns (${settings.budget.maxTurns} used)`);
    if (settings.budget.maxTotalTokens !== undefined && totalTokens(s.usage) >= settings.budget.maxTotalTokens) {
      return new OperationEnd(
        'failed',
        `budget: tokens (${totalTokens(s.usage)} of ${settings.budget.maxTotalTokens})`,
      );
    }
    if (settings.budget.maxDurationMs !== undefined && Date.now() - s.startedAtMs >= settings.budget.maxDurationMs) {
      return new OperationEnd('failed', `budget: deadline (${settings.budget.maxDurationMs} ms)`);
    }
    return undefined;
  };

  const loop = async (): Promise<OperationEnd> => {
    for (;;) {
      // Checkpoint: queued steering joins the tail, after any tool results.
      if (s.pendingSteering.length) {
        for (const text of s.pendingSteering.splice(0))
          s.tail.push({ type: 'text', text: `[steering from the user] ${text}` });
      }
      if (s.tail.length === 0) return new OperationEnd('completed', 'end_turn');
      const overBudget = checkBudget();
      if (overBudget) return overBudget;
      if (workflowInfo().continueAsNewSuggested) {
        await condition(allHandlersFinished);
        await continueAsNew<typeof operation>(rawInput, s);
      }

      phase = 'model';
      details();
      const reply = await withDeadline(
        settings.budget.maxDurationMs === undefined
          ? undefined
          : s.startedAtMs + settings.budget.maxDurationMs - Date.now(),
        () =>
          modelStep({
            operationId,
            lane: settings.lane,
            turn: s.turn + 1,
            model: settings.model,
            maxTokens: settings.maxTokensPerTurn,
            system: s.messages === 0 ? (settings.system ?? DEFAULT_SYSTEM_PROMPT) : undefined,
            base: { messages: s.messages, lastReplyId: s.lastReplyId },
            tail: s.tail,
          }),
      );
      if (reply === undefined)
        return new OperationEnd('failed', `budget: deadline (${settings.budget.maxDurationMs} ms)`);
      s.turn += 1;
      s.steps += 1;
      s.messages += 2;
      s.lastReplyId = reply.message.id;
      // Attempts that failed after consuming tokens are counted too (cost durability).
      s.usage = addUsage(addUsage(s.usage, reply.usage), reply.failedAttemptsUsage ?? ZERO_USAGE);
      s.tail = [];
      const text = replyText(reply);
      if (text) s.finalText = text;
      publish('counters');

      const toolUses = reply.message.content.filter(
        (block): block is Anthropic.ToolUseBlock => block.type === 'tool_use',
      );
      if (toolUses.length > 0 && reply.stopReason === 'max_tokens') {
        // A batch cut off by max_tokens is never executed: its JSON may parse while truncated.
        s.tail = toolUses.map((call) =>
          toolResult(
            call.id,
            'not executed: your reply was cut off at max_tokens, so this call may be incomplete. Send it again, smaller.',
            true,
          ),
        );
      } else if (toolUses.length > 0) {
        phase = 'tools';
        details();
        s.tail = await runToolBatch(toolUses);
        if (abortReason !== undefined) return new OperationEnd('aborted', `aborted: ${abortReason}`);
      } else if (reply.stopReason === 'refusal') {
        return new OperationEnd('failed', 'the model refused the request');
      } else if (s.pendingSteering.length === 0) {
        return new OperationEnd('completed', reply.stopReason ?? 'end_turn');
      }
      details();
    }
  };

  try {
    ended = await loopScope.run(loop);
  } catch (err) {
    if (isCancellation(err) || abortReason !== undefined) {
      ended = new OperationEnd('aborted', `aborted: ${abortReason ?? 'workflow cancelled'}`);
    } else if (err instanceof ActivityFailure) {
      const cause = err.cause;
      const type = cause instanceof ApplicationFailure && cause.type ? ` [${cause.type}]` : '';
      ended = new OperationEnd('failed', `model step failed${type}: ${cause?.message ?? err.message}`);
    } else {
      throw err;
    }
  }

  phase = 'finishing';
  details();
  if (s.sandboxUsed && !settings.keepContainer) {
    await CancellationScope.nonCancellable(async () => {
      try {
        await sandbox.destroySandbox({ sandboxId: sessionId, keepVolume: true });
      } catch {
        // A container left behind is listed by `agent sandbox ls` and removed by `agent sandbox gc`.
      }
    });
  }
  phase = 'done';
  publish('state');
  details();

  const result: OperationResult = {
    state: ended.state,
    reason: ended.reason,
    turns: s.turn,
    steps: s.steps,
    usage: s.usage,
    costUsd: costUsd(s.usage, settings.model),
    finalText: s.finalText,
    sessionId,
    workspaceVolume: workspaceVolumeName(sessionId),
    openToolResults: s.tail.filter((block): block is Anthropic.ToolResultBlockParam => block.type === 'tool_result'),
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

/** Runs `fn`, cancelling it when `remainingMs` passes first; `undefined` means the deadline won. */
async function withDeadline<T>(remainingMs: number | undefined, fn: () => Promise<T>): Promise<T | undefined> {
  if (remainingMs === undefined) return fn();
  if (remainingMs <= 0) return undefined;
  let expired = false;
  const work = new CancellationScope();
  const timerScope = new CancellationScope();
  const timer = timerScope
    .run(() => sleep(remainingMs))
    .then(
      () => {
        expired = true;
        work.cancel();
      },
      () => undefined,
    );
  try {
    return await work.run(fn);
  } catch (err) {
    if (expired && isCancellation(err)) return undefined;
    throw err;
  } finally {
    timerScope.cancel();
    await timer;
  }
}

function toolResult(toolUseId: string, content: string, isError: boolean): Anthropic.ToolResultBlockParam {
  return isError
    ? { type: 'tool_result', tool_use_id: toolUseId, content, is_error: true }
    : { type: 'tool_result', tool_use_id: toolUseId, content };
}

function replyText(reply: ModelStepResult): string {
  return reply.message.content
    .filter((block): block is Anthropic.TextBlock => block.type === 'text')
    .map((block) => block.text)
    .join('\n')
    .trim();
}

function requestedTimeoutMs(input: unknown): number | undefined {
  const value = (input as { timeout_ms?: unknown }).timeout_ms;
  return typeof value === 'number' ? value : undefined;
}

const roundCost = (usd: number): number => Math.round(usd * 1e6) / 1e6;

function repoLabel(repo: NonNullable<OperationSettings['repo']>): string {
  return repo.kind === 'local' ? repo.path : repo.url;
}

/** Docker names allow `[a-zA-Z0-9][a-zA-Z0-9_.-]`; workflow ids may hold anything. */
function sandboxIdFor(workflowId: string): string {
  const cleaned = workflowId.replace(/[^A-Za-z0-9_.-]/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  return (cleaned || 'operation').slice(0, 63);
}
