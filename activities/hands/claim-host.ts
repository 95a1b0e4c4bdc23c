/**
 * `claimSandboxHost`: the first hands call of a session, on the shared hands queue. Whichever hands
 * worker takes it answers with its host and the queue only it polls (`common/hands-route.ts`); a
 * worker without a host queue answers with the queue it was called on, so one host needs no routing.
 */
import type { HandsHost } from '../../common/hands-route';
import { currentActivity } from '../heartbeat';

/** How a hands worker describes itself; `taskQueue` absent when it polls only the shared queue. */
export interface HandsHostIdentity {
  host: string;
  taskQueue?: string;
  namePrefix: string;
}

export async function claimSandboxHost(identity: HandsHostIdentity): Promise<HandsHost> {
  const calledOn = currentActivity()?.info.taskQueue;
  const taskQueue = identity.taskQueue ?? calledOn;
  if (!taskQueue) throw new Error('claimSandboxHost must run as an activity');
  return { host: identity.host, taskQueue, namePrefix: identity.namePrefix };
}
