/**
 * Entry of a second workflow bundle, build B of `test/ops/versioning.test.ts`: the product's
 * workflows with one change to `operation` that a history recorded before it cannot replay — a timer
 * before the operation's first step, where the released code's first command is something else. On
 * an unversioned deployment that change without `patched()` breaks every running operation; pinned,
 * it breaks none.
 */
import { sleep } from '@temporalio/workflow';
import { operation as released } from '../../workflows/operation/operation';
import { declareVersioning } from '../../workflows/shared/versioning';

export { codingTask, forgeEvent, forgePoller, healthCheck, pullRequestLoop, rewind, session } from '../../workflows';

export async function operation(...args: Parameters<typeof released>): ReturnType<typeof released> {
  await sleep(1);
  return released(...args);
}
declareVersioning('operation', operation);
