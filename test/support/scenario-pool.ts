/**
 * Runs independent test scenarios a few at a time. The crash matrices use it: each scenario has its
 * own workflow id, task queues, worker processes and sandbox, and spends most of its time waiting
 * (worker start, heartbeat and workflow-task timeouts), so scenarios overlap well even on two cores.
 */

/**
 * Runs `task` on every item with at most `limit` in flight, starting items in their order, and
 * returns the results in the items' order. Once a task fails no further item starts; the ones in
 * flight finish, then the first failure is thrown (nothing keeps running after the caller is told).
 */
export async function runInPool<T, R>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const lane = async (): Promise<void> => {
    while (!failure && next < items.length) {
      const index = next++;
      try {
        results[index] = await task(items[index], index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  if (failure) throw failure.error;
  return results;
}

/** The most scenarios a crash matrix may run at once (each holds two or three worker processes). */
export const MAX_CRASH_MATRIX_CONCURRENCY = 8;

/**
 * How many crash-matrix scenarios run at once: `CRASH_MATRIX_CONCURRENCY` (1 runs them one after
 * another), default `fallback`.
 */
export function crashMatrixConcurrency(fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.CRASH_MATRIX_CONCURRENCY;
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > MAX_CRASH_MATRIX_CONCURRENCY)
    throw new Error(
      `CRASH_MATRIX_CONCURRENCY: "${raw}" must be a whole number from 1 to ${MAX_CRASH_MATRIX_CONCURRENCY}`,
    );
  return value;
}
