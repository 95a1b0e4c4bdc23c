/**
 * The session's sandbox: one workspace (volume) and one container for every lane, owned by the
 * session — an operation's end never removes it under another lane.
 *
 *  - The lease (`../operation/sandbox-lease.ts` is the operation's side): one operation at a time runs tool calls;
 *    waiting operations are served first come, first served; the holder keeps the lease until
 *    another asks (then it is asked to yield after its current call). Every grant is a signal in this
 *    history, so the order in which lanes used the workspace is on record.
 *  - Where the workspace is: the hands host the last holder reported (`handsHost`), handed to the next
 *    holder with the grant and used to remove the idle container.
 *  - Teardown: once the session is idle (no operation open or queued) for `sandboxIdleMs`, the
 *    container is removed (the volume stays); an operation accepted meanwhile waits for the removal
 *    to finish before it starts. `keepContainer` keeps it.
 */
import {
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { HandsActivities } from '../../common/hands';
import type { HandsHost } from '../../common/hands-route';
import { sandboxLeaseGrantedSignal, sandboxLeaseSignal, sandboxLeaseYieldSignal } from '../../common/lanes';
import { DEFAULT_HANDS_QUEUE } from '../../common/task-queues';
import { crashPoints } from '../shared/crash-point-sink';
import { SANDBOX_TEARDOWN_ACTIVITY_OPTIONS } from '../shared/policies';
import { isIdle, type SessionRun } from './state';

export function leaseSandbox(s: SessionRun): void {
  setHandler(sandboxLeaseSignal, ({ operationId, action, handsHost }) => {
    if (action === 'request') return request(s, operationId);
    noteHandsHost(s, operationId, handsHost);
    release(s, operationId);
  });
}

/**
 * Where the workspace is, as an operation releasing the lease mid-run reports it (one that ends
 * reports it in its result, `lanes.ts`): a host it used wins; `null` — it gave the host up — counts
 * only from the holder.
 */
function noteHandsHost(s: SessionRun, operationId: string, handsHost: HandsHost | null | undefined): void {
  if (handsHost) s.carry.handsHost = handsHost;
  else if (handsHost === null && s.lease.holder === operationId) s.carry.handsHost = undefined;
}

function grant(s: SessionRun, operationId: string): void {
  const { handsHost } = s.carry;
  // An operation that has ended no longer needs to hear it.
  getExternalWorkflowHandle(operationId)
    .signal(sandboxLeaseGrantedSignal, handsHost ? { handsHost } : {})
    .catch(() => undefined);
}

function askToYield(operationId: string): void {
  // An operation that has ended has given the lease back already.
  getExternalWorkflowHandle(operationId)
    .signal(sandboxLeaseYieldSignal)
    .catch(() => undefined);
}

function request(s: SessionRun, operationId: string): void {
  const { lease } = s;
  if (lease.holder === operationId) {
    grant(s, operationId);
    return;
  }
  if (lease.waiting.includes(operationId)) return;
  if (!lease.holder) {
    lease.holder = operationId;
    grant(s, operationId);
    return;
  }
  lease.waiting.push(operationId);
  if (!lease.yieldSent) {
    lease.yieldSent = true;
    askToYield(lease.holder);
  }
}

function release(s: SessionRun, operationId: string): void {
  const { lease } = s;
  if (lease.holder !== operationId) {
    lease.waiting = lease.waiting.filter((id) => id !== operationId);
    return;
  }
  lease.holder = lease.waiting.shift();
  lease.yieldSent = false;
  if (!lease.holder) return;
  grant(s, lease.holder);
  if (lease.waiting.length > 0) {
    lease.yieldSent = true;
    askToYield(lease.holder);
  }
}

/** Frees the lease of an operation that ended, and of the subagent operations it started. */
export function releaseLeasesOf(s: SessionRun, root: string): void {
  const owned = (id: string): boolean => id === root || s.running.get(id)?.root === root || id.startsWith(`${root}.`);
  s.lease.waiting = s.lease.waiting.filter((id) => !owned(id));
  if (s.lease.holder && owned(s.lease.holder)) release(s, s.lease.holder);
}

/** True when the container should go: the session is idle and a container may be up. */
export function sandboxRemovalDue(s: SessionRun): boolean {
  return s.sandbox === 'up' && isIdle(s);
}

/** Removes the container after `sandboxIdleMs` of idleness (the volume stays), unless work arrives first. */
export async function removeIdleSandbox(s: SessionRun): Promise<void> {
  const idleMs = s.settings.sandboxIdleMs;
  if (idleMs > 0) {
    const busyAgain = await condition(() => !isIdle(s), idleMs);
    if (busyAgain) return;
  }
  if (!sandboxRemovalDue(s)) return;
  s.sandbox = 'removing';
  // A host that is gone must not hold the session in `removing` (new operations wait for the removal).
  const hands = proxyActivities<HandsActivities>({
    ...SANDBOX_TEARDOWN_ACTIVITY_OPTIONS,
    // The host the lanes left the workspace on (hands routing), else the shared queue.
    taskQueue: s.carry.handsHost?.taskQueue ?? s.settings.handsTaskQueue ?? DEFAULT_HANDS_QUEUE,
    summary: 'remove the idle sandbox',
  });
  await CancellationScope.nonCancellable(async () => {
    try {
      await hands.destroySandbox({ sessionId: s.sessionId, keepVolume: true });
    } catch {
      // A container left behind is listed by `agent sandbox ls` and removed by `agent sandbox gc`.
    }
  });
  s.sandbox = 'removed';
  crashPoints.reached('session: sandbox removed');
}
