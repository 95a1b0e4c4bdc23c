/**
 * The workflow's side of hands routing (`common/hands-route.ts`): which task queue a session's hands
 * calls go to. The first call claims a host on the shared queue; every later call goes to that
 * host's own queue. Giving a lost host up is an explicit decision (`replace`), after which the next
 * call claims a host again; a call waiting on the lost host when the decision comes is cancelled
 * and fails with `HandsHostReplaced` (it never ran there, or ran on a host that is gone).
 *
 * Reusable by any workflow that owns a session's sandbox: it needs only the shared queue, the
 * session, the workflow's record of the chosen host (carried across continue-as-new) and a way to
 * run the claim (under the caller's stuck watch).
 */
import { ApplicationFailure, CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { SessionRef } from '../../common/hands';
import type { HandsHost, HandsRoutingActivities } from '../../common/hands-route';
import { CLAIM_HOST_ACTIVITY_OPTIONS } from './policies';

export const HANDS_HOST_REPLACED = 'HandsHostReplaced';

export interface HandsRouteOptions {
  sharedQueue: string;
  session: SessionRef;
  /**
   * The workflow's record of the chosen host (e.g. in the operation's carry): read, and told of a
   * host chosen or given up (`undefined`).
   */
  host: { current(): HandsHost | undefined; record(host: HandsHost | undefined): void };
  /** False in runs that predate routing: every call goes to the shared queue. */
  routing: boolean;
  /** Runs the claim activity (scheduled with `activityId`) — e.g. under a stuck watch. */
  watch?: <T>(activityId: string, queue: string, run: () => Promise<T>) => Promise<T>;
  /** Called when a host is chosen or given up. */
  onChange?: () => void;
}

export class HandsRoute {
  private claiming?: Promise<HandsHost>;
  private claims = 0;
  private readonly inFlight = new Set<CancellationScope>();
  private replacedReason?: string;
  /** Decisions taken, in order (shown in the operation's details). */
  readonly decisions: string[] = [];

  constructor(private readonly options: HandsRouteOptions) {}

  get host(): HandsHost | undefined {
    return this.options.host.current();
  }

  /** False in runs that predate routing (every call goes to the shared queue). */
  get routed(): boolean {
    return this.options.routing;
  }

  /** The queue for the session's next hands call (claims a host first when none is chosen). */
  async queue(): Promise<string> {
    if (!this.options.routing) return this.options.sharedQueue;
    const known = this.options.host.current();
    if (known) return known.taskQueue;
    this.claiming ??= this.claim().finally(() => (this.claiming = undefined));
    return (await this.claiming).taskQueue;
  }

  /** The queue calls go to now, without claiming: undefined while no host is chosen. */
  knownQueue(): string | undefined {
    return this.options.routing ? this.options.host.current()?.taskQueue : this.options.sharedQueue;
  }

  /**
   * Runs a hands call on the routed queue; when the host is given up while the call waits, the call
   * is cancelled and fails with `HandsHostReplaced`.
   */
  async call<T>(run: (queue: string) => Promise<T>): Promise<T> {
    const queue = await this.queue();
    if (!this.options.routing) return run(queue);
    const scope = new CancellationScope();
    this.inFlight.add(scope);
    try {
      return await scope.run(() => run(queue));
    } catch (err) {
      if (isCancellation(err) && this.replacedReason !== undefined && scope.consideredCancelled) {
        throw ApplicationFailure.nonRetryable(
          `not run: the hands host holding the workspace was given up (${this.replacedReason}); ` +
            'the next call starts on a new host with a new workspace, seeded again from the repository — ' +
            'files made before are not there',
          HANDS_HOST_REPLACED,
        );
      }
      throw err;
    } finally {
      this.inFlight.delete(scope);
    }
  }

  /** The explicit decision to give the current host up; returns the host given up. */
  replace(reason: string): string {
    const lost = this.options.host.current();
    if (!lost) throw new Error('no hands host has been chosen yet');
    this.options.host.record(undefined);
    this.replacedReason = reason;
    this.decisions.push(`gave up hands host ${lost.host}: ${reason}`);
    for (const scope of this.inFlight) scope.cancel();
    this.options.onChange?.();
    return lost.host;
  }

  private async claim(): Promise<HandsHost> {
    this.claims += 1;
    const activityId = `claim-hands-host-${this.claims}`;
    const { claimSandboxHost } = proxyActivities<HandsRoutingActivities>({
      ...CLAIM_HOST_ACTIVITY_OPTIONS,
      taskQueue: this.options.sharedQueue,
      activityId,
      summary: `claim a hands host for ${this.options.session.sessionId}`,
    });
    const run = () => claimSandboxHost(this.options.session);
    const host = await (this.options.watch ? this.options.watch(activityId, this.options.sharedQueue, run) : run());
    this.options.host.record(host);
    this.decisions.push(`hands host ${host.host} (queue ${host.taskQueue})`);
    this.options.onChange?.();
    return host;
  }
}
