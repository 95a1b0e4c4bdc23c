/**
 * Sending an Update that the server may refuse for a moment. While a workflow's task is on its third
 * or later attempt (after workers died holding it, or a busy worker let it time out) the server
 * refuses every Update request outright with FAILED_PRECONDITION ("Workflow Task in failed state"),
 * before it looks the Update up — including the client's own re-send of an Update it had already
 * admitted, which stays admitted and is delivered once the task succeeds. So every attempt carries the
 * same Update id: the server applies an id once, and a later attempt attaches to the admitted (or
 * completed) Update instead of adding a second one. Any other error is the caller's.
 */
import { randomUUID } from 'node:crypto';
import { isGrpcServiceError, ServiceError } from '@temporalio/client';

/** gRPC status FAILED_PRECONDITION. */
const FAILED_PRECONDITION = 9;

/** Whether `err` is the server refusing an Update request while the workflow task is failing. */
export function isUpdateRefusedForNow(err: unknown): boolean {
  const cause = err instanceof ServiceError ? err.cause : err;
  return isGrpcServiceError(cause) && cause.code === FAILED_PRECONDITION;
}

/**
 * Calls `send` with one Update id until the server takes the request (or `timeoutMs` passes, then
 * the last refusal is thrown); `send` must pass that id as the Update's `updateId`. `onRefused` hears
 * of the first refusal, for a progress line.
 */
export async function sendUntilAdmitted<T>(
  send: (updateId: string) => Promise<T>,
  options: { timeoutMs?: number; onRefused?: () => void; updateId?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const updateId = options.updateId ?? randomUUID();
  let told = false;
  for (;;) {
    try {
      return await send(updateId);
    } catch (err) {
      if (!isUpdateRefusedForNow(err) || Date.now() > deadline) throw err;
      if (!told) options.onRefused?.();
      told = true;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
