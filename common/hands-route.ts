/**
 * Routing a session's hands calls to the host that holds its workspace.
 *
 * Workspace volumes live on one Docker host. Every hands worker polls the shared hands queue and a
 * queue of its own (`hostQueueOf(shared, host)`). A session's first hands call is the claim, on the
 * shared queue: whichever host takes it answers with its own queue, and every later call of the
 * session goes there. When that host is gone, its queue has no poller: the operation reports
 * itself stuck on it, and a new workspace on another host is made only when someone decides so
 * with the `replaceHandsHost` Update (recorded in the history with its reason).
 *
 * Deterministic (imported by workflow code).
 */
import { defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import type { SessionRef } from './hands';
import { NAME_PREFIX_PATTERN, NAME_PREFIX_RULE } from './sandbox-names';

/** The host holding a session's workspace, as its hands worker describes itself. */
export interface HandsHost {
  /** The host's name (`AGENT_HANDS_HOST`, default the machine's hostname). */
  host: string;
  /** The queue only that host's hands worker polls. */
  taskQueue: string;
  /** What its container and volume names start with. */
  namePrefix: string;
}

export interface HandsRoutingActivities {
  /** Answered by whichever hands worker takes it: that worker's host. */
  claimSandboxHost(input: SessionRef): Promise<HandsHost>;
}

export const CLAIM_HOST_ACTIVITY = 'claimSandboxHost';

/** The task queue of one hands host: `<shared queue>@<host>`. */
export function hostQueueOf(sharedQueue: string, host: string): string {
  return `${sharedQueue}@${host}`;
}

/** Host names: letters, digits, '.', '_' or '-' (they become part of a task queue name). */
export const HOST_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/** A `HandsHost` handed to an operation by its session or parent operation. */
export const handsHostSchema = z.strictObject({
  host: z.string().regex(HOST_NAME_PATTERN, "must be 1-63 letters, digits, '.', '_' or '-'"),
  taskQueue: z.string().min(1).max(300),
  namePrefix: z.string().regex(NAME_PREFIX_PATTERN, `must be ${NAME_PREFIX_RULE}`),
});

export interface ReplaceHandsHostRequest {
  /** Why the old workspace is given up (recorded in the history and the operation's details). */
  reason: string;
}

export interface ReplaceHandsHostResult {
  accepted: true;
  /** The host given up. */
  lostHost: string;
}

/**
 * The explicit decision to give up a lost host: the call waiting on it is answered (not run) with
 * a result that says so, and the next hands call claims a host again and seeds a new workspace.
 * Rejected when the operation has no host yet.
 */
export const replaceHandsHostUpdate = defineUpdate<ReplaceHandsHostResult, [ReplaceHandsHostRequest]>(
  'replaceHandsHost',
);
