/**
 * Every activity attempt, described once at the activity boundary — its type, attempt, outcome,
 * time, and by type the model call's usage or the tool call's name and replay policy — for whoever
 * observes attempts: the harness's metrics (`metrics.ts`) and its trace spans (`tracing/`). A
 * replayed workflow runs no activity again, so nothing here sees a replayed step; a retried activity
 * is seen once per attempt.
 */
import { performance } from 'node:perf_hooks';
import type { Context } from '@temporalio/activity';
import type { Headers } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { COMPACT_CONTEXT_ACTIVITY, type CompactContextResult } from '../common/context';
import { toolCallIdOf, type RunToolInput, type ToolOutcome } from '../common/hands';
import { MODEL_STEP_ACTIVITY, type ModelStepInput, type ModelStepResult } from '../common/model-step';
import type { TokenUsage } from '../common/model-types';
import { replayPolicyOf } from '../common/tools';

export const RUN_TOOL_ACTIVITY = 'runTool';

export type AttemptOutcome = 'completed' | 'tool_error' | 'failed' | 'cancelled';

/** One attempt of one activity, as it ended. */
export interface ObservedAttempt {
  info: Context['info'];
  /** The headers the workflow scheduled it with (a traced parent's context, `common/trace.ts`). */
  headers: Headers;
  /** Epoch milliseconds. */
  startedAt: number;
  durationMs: number;
  outcome: AttemptOutcome;
  /** The failure's type and message, for a failed or cancelled attempt. */
  failure?: { type: string; message: string };
  /** A model step or a compaction: what it used, and of which model (the step's, else the worker's). */
  model?: {
    kind: typeof MODEL_STEP_ACTIVITY | typeof COMPACT_CONTEXT_ACTIVITY;
    model: string;
    turn?: number;
    usage?: TokenUsage;
    failedAttemptsUsage?: TokenUsage;
    stopReason?: string | null;
  };
  /** A tool call in the sandbox. */
  tool?: { name: string; replayPolicy: string; callId?: string; exitCode?: number; egressDenied?: number };
}

export interface AttemptObserver {
  /** An attempt begins (before the activity runs). */
  started?(info: Context['info']): void;
  /** An attempt ended; must not throw. */
  ended(attempt: ObservedAttempt): void;
}

/** Describes each attempt to the observers. */
export class AttemptObserverInterceptor implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly ctx: Context,
    private readonly observers: readonly AttemptObserver[],
    /** The brain's model when a step names none (the worker's `AGENT_MODEL`). */
    private readonly defaultModel: string | undefined,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const info = this.ctx.info;
    for (const observer of this.observers) observer.started?.(info);
    const startedAt = Date.now();
    const started = performance.now();
    const arg = input.args[0];
    let result: unknown;
    let failure: unknown;
    let failed = false;
    try {
      result = await next(input);
      return result;
    } catch (err) {
      failed = true;
      failure = err;
      throw err;
    } finally {
      const attempt = describe(info.activityType, info.activityId, arg, {
        failed,
        result,
        failure,
        cancelled: failed && this.ctx.cancellationSignal.aborted,
        defaultModel: this.defaultModel,
      });
      const observed: ObservedAttempt = {
        info,
        headers: input.headers,
        startedAt,
        durationMs: Math.round(performance.now() - started),
        ...attempt,
      };
      for (const observer of this.observers) {
        try {
          observer.ended(observed);
        } catch {
          // An observer's fault must not become the activity's.
        }
      }
    }
  }
}

type Described = Pick<ObservedAttempt, 'outcome' | 'failure' | 'model' | 'tool'>;

function describe(
  activityType: string,
  activityId: string,
  arg: unknown,
  end: { failed: boolean; result: unknown; failure: unknown; cancelled: boolean; defaultModel: string | undefined },
): Described {
  const outcome: AttemptOutcome = end.cancelled ? 'cancelled' : end.failed ? 'failed' : 'completed';
  const failure = end.failed ? failureOf(end.failure) : undefined;
  const base: Described = { outcome, ...(failure ? { failure } : {}) };
  if (activityType === MODEL_STEP_ACTIVITY) {
    const step = arg as ModelStepInput | undefined;
    const reply = end.failed ? undefined : (end.result as ModelStepResult);
    return {
      ...base,
      model: {
        kind: MODEL_STEP_ACTIVITY,
        model: step?.model ?? end.defaultModel ?? 'default',
        ...(typeof step?.turn === 'number' ? { turn: step.turn } : {}),
        ...(reply
          ? {
              usage: reply.usage,
              stopReason: reply.stopReason,
              ...(reply.failedAttemptsUsage ? { failedAttemptsUsage: reply.failedAttemptsUsage } : {}),
            }
          : {}),
      },
    };
  }
  if (activityType === COMPACT_CONTEXT_ACTIVITY) {
    const compacted = end.failed ? undefined : (end.result as CompactContextResult);
    return {
      ...base,
      model: {
        kind: COMPACT_CONTEXT_ACTIVITY,
        model: end.defaultModel ?? 'default',
        ...(compacted
          ? {
              usage: compacted.usage,
              ...(compacted.failedAttemptsUsage ? { failedAttemptsUsage: compacted.failedAttemptsUsage } : {}),
            }
          : {}),
      },
    };
  }
  if (activityType === RUN_TOOL_ACTIVITY) {
    const call = isRecord(arg) ? (arg as Partial<RunToolInput>) : {};
    const callId = call.toolCallId ?? toolCallIdOf(activityId);
    const name = typeof call.name === 'string' ? call.name : '?';
    const tool = end.failed ? undefined : (end.result as ToolOutcome);
    return {
      ...base,
      ...(tool?.isError ? { outcome: 'tool_error' as const } : {}),
      tool: {
        name,
        replayPolicy: policyOf(name),
        ...(typeof callId === 'string' ? { callId } : {}),
        ...(typeof tool?.exitCode === 'number' ? { exitCode: tool.exitCode } : {}),
        ...(tool?.egress?.denied ? { egressDenied: tool.egress.denied } : {}),
      },
    };
  }
  return base;
}

function failureOf(err: unknown): { type: string; message: string } {
  if (!(err instanceof Error)) return { type: 'Error', message: String(err) };
  const type = (err as Error & { type?: unknown }).type;
  return { type: typeof type === 'string' && type ? type : err.name, message: err.message };
}

function policyOf(name: string): string {
  try {
    return replayPolicyOf(name);
  } catch {
    return 'unknown';
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
