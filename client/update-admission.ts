/**
 * Sending an Update that the server may refuse for a moment. While a workflow's task is on a retry
 * attempt (after a worker died holding it, or a busy worker let it time out) the server refuses
 * every Update outright with FAILED_PRECONDITION ("Workflow Task in failed state"): nothing was
 * admitted, so sending it again cannot apply it twice. Any other error is the caller's.
 */
import { isGrpcServiceError, ServiceError } from '@temporalio/client';

/** gRPC status FAILED_PRECONDITION. */
const FAILED_PRECONDITION = 9;

/** Whether `err` is the server refusing an Update it did not admit. */
export function isUpdateRefusedForNow(err: unknown): boolean {
  const cause = err instanceof ServiceError ? err.cause : err;
  return isGrpcServiceError(cause) && cause.code === FAILED_PRECONDITION;
}

/**
 * Calls `send` until the server admits the Update (or `timeoutMs` passes, then the last refusal is
 * thrown). `onRefused` hears of the first refusal, for a progress line.
 */
export async function sendUntilAdmitted<T>(
  send: () => Promise<T>,
  options: { timeoutMs?: number; onRefused?: () => void } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let told = false;
  for (;;) {
    try {
      return await send();
    } catch (err) {
      if (!isUpdateRefusedForNow(err) || Date.now() > deadline) throw err;
      if (!told) options.onRefused?.();
      told = true;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
