/**
 * Follows a running operation: polls its status query and prints progress (turn, tool, tokens,
 * elapsed) — one rewritten line on a terminal, one line per change otherwise. With `live`, it also
 * prints the operation's live events as they happen (the model's text as it streams, each tool call
 * as it starts and ends; `client/live.ts`), and progress goes on its own lines. An operation queued
 * as a follow-up is waited for until it starts.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { LiveTranscript, liveEvents } from '../client/live';
import { operationStarted } from '../client/operation-result';
import { totalTokens } from '../common/model-types';
import { OperationStatus, statusQuery } from '../common/operation';

export function formatProgress(status: OperationStatus, elapsedMs: number): string {
  const tokens = totalTokens(status.usage);
  const tool = status.lastTool ? ` · ${status.lastTool.summary}${status.lastTool.isError ? ' ✗' : ''}` : '';
  const steering = status.pendingSteering ? ` · ${status.pendingSteering} steering queued` : '';
  const stuck = status.stuck ? ` · ⚠ ${status.stuck.reason}` : '';
  // Absent in the status of operations started by an older worker.
  const context = status.context
    ? ` · context ${status.context.pct}%${status.context.compactions ? ` (${status.context.compactions} compactions)` : ''}`
    : '';
  const waiting = status.waitingApproval
    ? ` · waiting for approval: ${status.waitingApproval.summary} (${status.waitingApproval.toolCallId})`
    : '';
  return `turn ${status.turn} · ${status.phase}${tool} · ${formatTokens(tokens)} tokens · $${status.costUsd.toFixed(4)}${context} · ${formatElapsed(elapsedMs)}${steering}${waiting}${stuck}`;
}

export const formatTokens = (n: number): string =>
  n >= 1_000_000 ? `${(n / 1e6).toFixed(2)}M` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n);

export function formatElapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/** Polls until the workflow closes or `stop` resolves. */
export async function followOperation(
  handle: WorkflowHandle,
  options: { stop: Promise<void>; out?: NodeJS.WriteStream; intervalMs?: number; live?: { client: Client } },
): Promise<'closed' | 'detached'> {
  const out = options.out ?? process.stdout;
  const started = Date.now();
  let stopped = false;
  void options.stop.then(() => {
    stopped = true;
  });
  const onWaiting = () =>
    out.write(`waiting for ${handle.workflowId} to start (queued behind its lane's operation)…\n`);
  if (!(await operationStarted(handle, { stop: options.stop, intervalMs: 500, onWaiting }))) return 'detached';
  const abort = new AbortController();
  const live = options.live ? printLive(options.live.client, handle.workflowId, out, abort.signal) : undefined;
  const tty = out.isTTY && !live;
  let last = '';
  const result = handle.result().then(
    () => undefined,
    () => undefined,
  );
  let closed = false;
  void result.then(() => {
    closed = true;
  });
  while (!closed && !stopped) {
    try {
      const status = await handle.query(statusQuery);
      const line = formatProgress(
        status,
        Date.parse(status.startedAt) ? Date.now() - Date.parse(status.startedAt) : Date.now() - started,
      );
      if (tty) out.write(`\r\x1b[2K${line}`);
      else if (line.replace(/ · \d\d:\d\d/, '') !== last.replace(/ · \d\d:\d\d/, '')) out.write(`${line}\n`);
      last = line;
    } catch {
      // The query fails while no worker has picked the workflow up yet; keep polling.
    }
    await Promise.race([
      result,
      options.stop,
      new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 500)),
    ]);
  }
  if (tty && last) out.write('\n');
  // The live stream ends by itself once the operation has closed; give it a moment to deliver the rest.
  if (live && closed) await Promise.race([live, new Promise((resolve) => setTimeout(resolve, 5_000))]);
  abort.abort();
  await live;
  return closed ? 'closed' : 'detached';
}

/** Waits until the operation exists (a queued follow-up starts when its lane is free); false when stopped first. */
/** Prints the operation's live events until it ends or `signal` aborts; never fails the follower. */
async function printLive(
  client: Client,
  operationId: string,
  out: NodeJS.WriteStream,
  signal: AbortSignal,
): Promise<void> {
  const transcript = new LiveTranscript();
  try {
    for await (const event of liveEvents(client, operationId, { signal })) {
      for (const piece of transcript.accept(event)) out.write('text' in piece ? piece.text : `${piece.line}\n`);
    }
  } catch {
    // Live text is a convenience; the progress lines and the result still come.
  }
}
