/**
 * The operation's side of the sandbox lifecycle: provisioning (lazy by default — the first tool call
 * seeds the workspace, which creates the container — or eager, alongside the first model call) and
 * teardown (the container goes, the workspace volume stays). An operation run by a session uses the
 * sandbox under the session's lease (`sandbox-lease.ts`) and leaves the teardown to the session; a
 * subagent operation leaves it to the operation that started it.
 */
import { CancellationScope, proxyActivities } from '@temporalio/workflow';
import type { HandsActivities } from '../common/hands';
import { heartbeatOverride, type OperationRun } from './operation-state';
import { SANDBOX_ACTIVITY_OPTIONS } from './policies';
import { sandboxLease } from './sandbox-lease';

export interface OperationSandbox {
  /** Runs `fn` (a tool call) once the workspace is ready (seeded from the repository, if any) and the operation holds the sandbox. */
  use<T>(fn: () => Promise<T>): Promise<T>;
  /** Gives the sandbox back; removes the container if this operation owns it, used it and was not asked to keep it. */
  teardown(): Promise<void>;
}

export function provisionSandbox(op: OperationRun): OperationSandbox {
  const { settings, carry } = op;
  const hands = proxyActivities<HandsActivities>({
    ...SANDBOX_ACTIVITY_OPTIONS,
    ...heartbeatOverride(op),
    taskQueue: op.handsQueue,
  });
  const ref = { sessionId: op.sessionId, operationId: op.operationId };
  const lease = sandboxLease(op);
  const ownsSandbox = !settings.session && !settings.lineage;

  const ensureWorkspace = async (): Promise<void> => {
    carry.sandboxUsed = true;
    if (settings.repo && !carry.seeded) {
      await hands.seedWorkspace({ ...ref, source: settings.repo });
      carry.seeded = true;
    }
  };
  const startEagerly = (): Promise<void> =>
    settings.repo ? ensureWorkspace() : hands.ensureSandbox(ref).then(() => void (carry.sandboxUsed = true));
  // Lazy by default: the first model request never waits for a container.
  const eager = settings.eagerSandbox && !carry.sandboxUsed ? lease.use(startEagerly) : undefined;
  // An eager failure surfaces at the first tool call, which awaits the same promise.
  eager?.catch(() => undefined);

  return {
    use: (fn) =>
      lease.use(async () => {
        await (eager ?? ensureWorkspace());
        return fn();
      }),
    async teardown() {
      lease.end();
      if (!ownsSandbox || !carry.sandboxUsed || settings.keepContainer) return;
      await CancellationScope.nonCancellable(async () => {
        try {
          await hands.destroySandbox({ sessionId: op.sessionId, keepVolume: true });
        } catch {
          // A container left behind is listed by `agent sandbox ls` and removed by `agent sandbox gc`.
        }
      });
    },
  };
}
