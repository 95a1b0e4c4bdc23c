/**
 * Follows a running operation: polls its status query and prints progress (turn, tool, tokens,
 * elapsed) — one rewritten line on a terminal, one line per change otherwise.
 */
import type { WorkflowHandle } from '@temporalio/client';
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
  return `turn ${status.turn} · ${status.phase}${tool} · ${formatTokens(tokens)} tokens · $${status.costUsd.toFixed(4)}${context} · ${formatElapsed(elapsedMs)}${steering}${stuck}`;
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
  options: { stop: Promise<void>; out?: NodeJS.WriteStream; intervalMs?: number },
): Promise<'closed' | 'detached'> {
  const out = options.out ?? process.stdout;
  const started = Date.now();
  let stopped = false;
  void options.stop.then(() => {
    stopped = true;
  });
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
      if (out.isTTY) out.write(`\r\x1b[2K${line}`);
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
  if (out.isTTY && last) out.write('\n');
  return closed ? 'closed' : 'detached';
}
