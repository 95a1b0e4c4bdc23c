/**
 * The operation's side of its session's sandbox lease. Lanes of one session run in parallel but share
 * one workspace, so the session lets one operation at a time use the sandbox: every tool call (and
 * the workspace seeding) runs while the operation holds the lease. Each call thus sees the workspace
 * exactly as the previous call left it — in whichever lane that call ran — and the order of the
 * calls is recorded in the session's history.
 *
 * The lease is sticky: once granted it stays with the operation, at no cost per call, until the
 * session asks for it back because another operation waits (`sandboxLeaseYield`); then it is
 * released after the call in progress. An operation that is not run by a session has no lease.
 *
 * The lease also carries where the workspace is (hands routing, `../shared/hands-route.ts`): a grant names the
 * session's hands host when the session knows it, and a release reports the host the operation
 * used (as does its result: the release an operation sends as it ends is not delivered), so the
 * lanes of a session never claim different hosts.
 */
import { condition, getExternalWorkflowHandle, setHandler } from '@temporalio/workflow';
import { sandboxLeaseGrantedSignal, sandboxLeaseSignal, sandboxLeaseYieldSignal } from '../../common/lanes';
import type { OperationRun } from './state';

export interface SandboxLease {
  /** Runs `fn` while holding the lease (waiting for it first if another operation has it). */
  use<T>(fn: () => Promise<T>): Promise<T>;
  /** Gives the lease back (or withdraws the request) as the operation ends. */
  end(): void;
}

const NO_LEASE: SandboxLease = { use: (fn) => fn(), end: () => undefined };

export function sandboxLease(op: OperationRun): SandboxLease {
  const link = op.settings.session;
  if (!link) return NO_LEASE;
  const session = getExternalWorkflowHandle(link.workflowId);
  const state = { held: false, requested: false, yieldAsked: false, inUse: 0 };
  const send = (action: 'request' | 'release'): void => {
    // The next holder's hands calls go to the host this operation left the workspace on.
    const handsHost = action === 'release' ? { handsHost: op.carry.handsHost ?? null } : {};
    // A session that no longer exists has nobody to coordinate with.
    session.signal(sandboxLeaseSignal, { operationId: op.operationId, action, ...handsHost }).catch(() => undefined);
  };
  const release = (): void => {
    Object.assign(state, { held: false, requested: false, yieldAsked: false });
    send('release');
  };
  setHandler(sandboxLeaseGrantedSignal, (grant) => {
    // The session's word on where the workspace is wins: another lane may have claimed or replaced the host meanwhile.
    if (grant?.handsHost) op.claimHandsHost(grant.handsHost);
    state.held = true;
    state.requested = false;
  });
  setHandler(sandboxLeaseYieldSignal, () => {
    state.yieldAsked = true;
    if (state.held && state.inUse === 0) release();
  });
  return {
    async use(fn) {
      // Counted while waiting too: a yield that arrives meanwhile is honoured after this call.
      state.inUse += 1;
      try {
        if (!state.held) {
          if (!state.requested) {
            state.requested = true;
            send('request');
          }
          await condition(() => state.held);
        }
        return await fn();
      } finally {
        state.inUse -= 1;
        if (state.yieldAsked && state.held && state.inUse === 0) release();
      }
    },
    end() {
      if (state.held || state.requested) release();
    },
  };
}
