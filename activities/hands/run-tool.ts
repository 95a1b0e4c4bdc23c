/**
 * `runTool`: one tool call in the session's sandbox. Validates the call again, makes sure the
 * container runs (replacing a dead one on the same volume and saying so in the result), and runs the
 * tool under the run wrapper with the journal. On a retried attempt the tool's replay policy decides
 * what the earlier attempt's traces mean (`earlier-attempt.ts`).
 */
import type { Context } from '@temporalio/activity';
import {
  DEFAULT_TOOL_TIMEOUT_MS,
  HANDS_FAILURE_TYPES,
  toolCallIdOf,
  type RunToolInput,
  type ToolCallCheckpoint,
  type ToolOutcome,
} from '../../common/hands';
import { checkpointResult, toolCallCheckpointSchema } from '../../common/checkpoints';
import { replayPolicyOf, toolSummary, validateToolCall, type ToolInput, type ToolName } from '../../common/tools';
import { crashPoint } from '../crash-points';
import { beginToolEgress, finishToolEgress } from '../egress/tool-egress';
import { currentActivity, Heartbeat } from '../heartbeat';
import { sessionOf, type HandsContext } from './deps';
import { earlierAttempt, type EarlierAttempt } from './earlier-attempt';
import { attemptCancellation } from './attempt-cancellation';
import { handsFailure, throwCancelled, toActivityFailure } from './failures';
import { journalFor, outputPathOf, runBaseOf } from './journal';
import { shapeOutput } from './output';
import { resourceNotes, workspaceLooksFull } from './resource-limits';
import { SandboxError } from './docker-calls';
import type { ExecOptions } from './run-wrapper';
import type { ExecResult } from './sandbox-commands';
import { HANDS_TOOLS } from './tools';
import type { HandsTool, ToolContext, ToolResult } from './tools/types';

const TOOL_CALL_ID = /^[A-Za-z0-9_.-]{1,128}$/;

/** A call as it runs: what its input left out filled in (`RunToolInput`), its tool input checked. */
type ValidCall = Omit<RunToolInput, 'toolCallId' | 'sessionId' | 'checkpoint'> & {
  toolCallId: string;
  sessionId: string;
  operationId: string;
  timeoutMs: number;
  checkpoint?: Required<ToolCallCheckpoint>;
  name: ToolName;
  input: ToolInput<ToolName>;
};

/**
 * One try of a call on the current container: its result, or the reason the container was lost; and
 * why it ran with `docker exec` if the sandbox's executor could not start.
 */
type Attempt = { result?: ToolResult; synthetic: boolean; lost?: string; executorFallback?: string };

export async function runTool(hands: HandsContext, raw: RunToolInput): Promise<ToolOutcome> {
  const ctx = currentActivity();
  const toolCallId = raw.toolCallId ?? toolCallIdOf(ctx?.info.activityId ?? '');
  if (typeof toolCallId !== 'string' || !TOOL_CALL_ID.test(toolCallId)) {
    throw handsFailure(
      HANDS_FAILURE_TYPES.invalidInput,
      raw.toolCallId === undefined
        ? `no toolCallId, and the activity id ${JSON.stringify(ctx?.info.activityId ?? null)} is not a tool call's (tool-<toolCallId>)`
        : `invalid toolCallId ${JSON.stringify(raw.toolCallId)}: use letters, digits, '_', '.', '-'`,
    );
  }
  const { checkpoint: asked, ...rest } = raw;
  const checkpoint = asked === undefined ? undefined : toolCallCheckpointSchema.safeParse(asked);
  if (checkpoint && !checkpoint.success) {
    const issue = checkpoint.error.issues[0];
    throw handsFailure(
      HANDS_FAILURE_TYPES.invalidInput,
      `invalid checkpoint.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`,
    );
  }
  const checked = validateToolCall(raw.name, raw.input);
  if (!checked.ok) return { content: checked.error, isError: true };
  // Absent, the session is the calling operation's own: its workflow id.
  const sessionId = sessionOf(raw) || (ctx?.info.workflowExecution?.workflowId ?? '');
  const call: ValidCall = {
    ...rest,
    toolCallId,
    sessionId,
    operationId: raw.operationId ?? sessionId,
    timeoutMs: raw.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
    ...(checkpoint ? { checkpoint: checkpoint.data } : {}),
    name: raw.name as ToolName,
    input: checked.input,
  };

  // Most tool calls end within half a second: none of them writes a heartbeat (the details are for the
  // Web UI's pending-activity view; recovery reads the workspace journal, not heartbeats).
  const heartbeat = new Heartbeat<Record<string, unknown>>(
    ctx,
    hands.heartbeatEveryMs,
    { toolCallId: call.toolCallId, tool: call.name },
    false,
  );
  try {
    const { lifecycle } = hands.sandboxes;
    const removals = lifecycle.removalsOf(call.sessionId);
    const sandbox = await lifecycle.ensure(call.sessionId, { operationId: call.operationId });
    let replaced = sandbox.replaced;
    // egress hook: the proxy serves this call's policy; what the call reached is counted after it.
    const egressCall = await beginToolEgress(
      hands.egress,
      call.sessionId,
      hands.sandboxes.lifecycle.namePrefix,
      call.egress,
    );
    let attempt = await attemptToolCall(hands, call, ctx, heartbeat);
    if (attempt.lost) {
      // Removed on purpose while the call ran (the operation ended or was aborted, and the server
      // had given up on this attempt): nobody wants the container back, and nobody would remove it.
      if (lifecycle.removalsOf(call.sessionId) !== removals)
        throw new SandboxError(
          'lost',
          `the sandbox was removed while this call ran (${attempt.lost}); the call is not run again`,
        );
      // The container died under the call: replace it; a `never` call then reports itself
      // interrupted (its journal shows it started), others run again once.
      const again = await lifecycle.ensure(call.sessionId, { operationId: call.operationId });
      replaced = again.replaced ?? attempt.lost;
      attempt = await attemptToolCall(hands, call, ctx, heartbeat);
      if (attempt.lost) throw new SandboxError('lost', attempt.lost);
    }
    const result = attempt.result!;
    const egress = await finishToolEgress(egressCall);
    // A copy of the output the model is pointed at (a spill) is in the workspace: the probe leaves
    // those copies out, so such a call's checkpoint reads the workspace whole.
    const recorded = call.checkpoint ? await checkpointAfterCall(hands, call, call.checkpoint, !!result.spill) : {};
    const content = [
      ...(replaced ? [`[sandbox restarted: ${replaced}; /workspace is preserved]`] : []),
      result.content,
      ...egress.notes,
    ].join('\n');
    return {
      // A token a tool echoed never reaches the history.
      content: hands.secrets ? hands.secrets.mask(content) : content,
      ...(result.isError ? { isError: true } : {}),
      ...(attempt.synthetic ? { synthetic: true } : {}),
      ...(result.exitCode !== undefined ? { exitCode: result.exitCode } : {}),
      ...(replaced ? { sandboxReplaced: replaced } : {}),
      ...(result.spill ? { spill: result.spill } : {}),
      ...(egress.summary ? { egress: egress.summary } : {}),
      ...(attempt.executorFallback ? { executorFallback: attempt.executorFallback } : {}),
      ...recorded,
    };
  } catch (err) {
    throw toActivityFailure(err);
  } finally {
    heartbeat.stop();
  }
}

/**
 * The turn's checkpoint, recorded after the call in the same activity (`RunToolInput.checkpoint`).
 * One that fails costs the checkpoint, never the call's result.
 */
async function checkpointAfterCall(
  hands: HandsContext,
  call: ValidCall,
  checkpoint: Required<ToolCallCheckpoint>,
  full: boolean,
): Promise<Pick<ToolOutcome, 'checkpoint' | 'checkpointFailure'>> {
  try {
    const outcome = await hands.sandboxes.checkpoints.record(
      {
        sessionId: call.sessionId,
        operationId: call.operationId,
        turn: checkpoint.turn,
        kind: 'turn',
        exclude: checkpoint.exclude,
      },
      full ? 'full' : 'probe',
    );
    return { checkpoint: checkpointResult(outcome) };
  } catch (err) {
    return { checkpointFailure: toActivityFailure(err).message };
  }
}

/** One try at a tool call on the current container, honouring the journal. */
async function attemptToolCall(
  hands: HandsContext,
  call: ValidCall,
  ctx: Context | undefined,
  heartbeat: Heartbeat<Record<string, unknown>>,
): Promise<Attempt> {
  const { commands, files } = hands.sandboxes;
  const policy = replayPolicyOf(call.name);
  // The map is keyed by name, so each implementation receives its own input type.
  const tool = HANDS_TOOLS[call.name] as HandsTool<ToolInput<ToolName>>;
  const toolCtx: ToolContext = {
    toolCallId: call.toolCallId,
    spill: hands.spill,
    outputPath: outputPathOf(call.toolCallId),
    timeoutMs: call.timeoutMs,
  };
  const prepared = tool.prepare(call.input, toolCtx);
  const cancellation = attemptCancellation(ctx);
  if (cancellation.aborted) await throwCancelled(ctx);
  if (prepared.files) await files.put(call.sessionId, prepared.files);

  const journal = journalFor({
    toolCallId: call.toolCallId,
    tool: call.name,
    replayPolicy: policy,
    summary: toolSummary(call.name, call.input),
    command: prepared.journalCommand,
    ...(ctx ? { activityAttempt: ctx.info.attempt } : {}),
  });
  const options: ExecOptions = {
    command: prepared.command,
    ...(prepared.args ? { args: prepared.args } : {}),
    runBase: runBaseOf(call.toolCallId),
    timeoutMs: prepared.timeoutMs,
    ...(hands.outputCaptureBytes ? { maxOutputBytes: hands.outputCaptureBytes } : {}),
    outputLink: outputPathOf(call.toolCallId),
    journal,
    ...(cancellation.kill ? { signal: cancellation.kill } : {}),
    onProcess: (process) => {
      crashPoint(`tool: process running (${call.name} ${call.toolCallId})`);
      heartbeat.merge({ pid: process.pid, attempt: process.attempt }, false);
    },
  };
  const formatted = (run: FinishedRun): Promise<Attempt> => formattedRun(hands, call, tool, toolCtx, run);
  const earlier = (asPolicy: typeof policy): Promise<EarlierAttempt> =>
    earlierAttempt({
      commands,
      sessionId: call.sessionId,
      toolCallId: call.toolCallId,
      policy: asPolicy,
      timeoutMs: prepared.timeoutMs,
      ctx,
      heartbeat,
      cancellation,
    });
  const execute = (opts: ExecOptions): Promise<ExecResult> =>
    cancellation.orAbandoned(commands.exec(call.sessionId, opts));

  if (policy !== 'never' && ctx && ctx.info.attempt > 1) {
    // A retry of a safe or idempotent call whose earlier attempt finished (its worker died before
    // the result was recorded) returns that attempt's result, so the transcript reads exactly as
    // if nothing had happened; one still running is awaited; one that never ran or died runs again.
    const found = await earlier('never');
    if (found.kind === 'finished') return formatted(found.run);
  }
  crashPoint(`tool: before process start (${call.name} ${call.toolCallId})`);
  let run: ExecResult = await execute(options);
  crashPoint(`tool: after process end (${call.name} ${call.toolCallId})`);
  if (run.kind === 'journal-exists') {
    const found = await earlier(policy);
    if (found.kind === 'run') run = await execute({ ...options, journal: { ...journal, mode: 'append' } });
    else if (found.kind === 'finished') run = found.run;
    else return { result: interruptedResult(hands, call, found), synthetic: true };
  }
  if (run.kind === 'executor-lost') {
    // The sandbox's executor died under the call, the container did not: the command may still run.
    // As on a retried attempt, a finished run is taken and a running one awaited; for one that never
    // finished, the replay policy decides.
    const found = await earlier('never');
    if (found.kind === 'finished') run = found.run;
    else if (found.kind === 'run' || policy !== 'never')
      run = await execute({ ...options, journal: { ...journal, mode: 'append' } });
    else return { result: interruptedResult(hands, call, found), synthetic: true };
    if (run.kind === 'executor-lost') throw new SandboxError('unavailable', run.reason);
  }
  if (run.kind === 'lost') return { lost: run.reason, synthetic: false };
  if (run.kind !== 'finished') throw new SandboxError('failed', 'the journal appeared while the call ran');
  if (run.exit.cancelled && cancellation.kill?.aborted) await throwCancelled(ctx);
  return formatted(run);
}

type FinishedRun = Extract<ExecResult, { kind: 'finished' }>;

/** A finished run as the tool's result, with notes on the resource limits it hit. */
async function formattedRun(
  hands: HandsContext,
  call: ValidCall,
  tool: HandsTool<ToolInput<ToolName>>,
  toolCtx: ToolContext,
  run: FinishedRun,
): Promise<Attempt> {
  const { lifecycle } = hands.sandboxes;
  const result = tool.format({ exit: run.exit, output: run.output, outputPath: run.outputPath }, call.input, toolCtx);
  const notes = resourceNotes(run.exit, run.output, {
    ...lifecycle.limits,
    ...(workspaceLooksFull(run.exit, run.output)
      ? { workspaceQuotaBytes: await lifecycle.workspaceQuotaBytes(call.sessionId) }
      : {}),
  });
  const fallback = run.executorFallback ? { executorFallback: run.executorFallback } : {};
  if (!notes.length) return { result, synthetic: false, ...fallback };
  return { result: { ...result, content: `${result.content}\n${notes.join('\n')}` }, synthetic: false, ...fallback };
}

/** The synthetic result of a `never` call that started and died before its result was recorded. */
function interruptedResult(
  hands: HandsContext,
  call: ValidCall,
  found: Extract<EarlierAttempt, { kind: 'interrupted' }>,
): ToolResult {
  const who = `attempt ${found.attempt}${found.pid ? `, process ${found.pid}` : ''}${found.startedAt ? `, started ${found.startedAt}` : ''}`;
  const lines = [
    `[interrupted: this ${call.name} call was already started (${who}) and was cut off before its result was recorded — the worker or the sandbox stopped. ` +
      'Its outcome is unknown: it may have run partly or completely. It was not run again. The workspace is preserved. ' +
      'Inspect the workspace (files, git status, processes) before deciding whether to run it again.]',
  ];
  if (found.partialOutput.length) {
    const shaped = shapeOutput(found.partialOutput, `${runBaseOf(call.toolCallId)}/${found.attempt}/out`, hands.spill);
    lines.push(
      `Partial output captured before the interruption (${found.partialOutput.length} bytes):`,
      shaped.text.replace(/\n$/, ''),
    );
    return { content: lines.join('\n'), isError: true, ...(shaped.spill ? { spill: shaped.spill } : {}) };
  }
  lines.push('No output was captured.');
  return { content: lines.join('\n'), isError: true };
}
