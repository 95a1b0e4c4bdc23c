/**
 * The operation's side of the sandbox lifecycle: the check of the repository to seed (on the hands
 * host, before the first model call), provisioning (lazy by default — the first tool call seeds the
 * workspace, which creates the container — or eager, alongside the first model call) and teardown
 * (the container goes, the workspace volume stays).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  patched,
  proxyActivities,
} from '@temporalio/workflow';
import { HANDS_FAILURE_TYPES, type HandsActivities } from '../common/hands';
import { heartbeatOverride, OperationEnd, type OperationRun } from './operation-state';
import { SANDBOX_ACTIVITY_OPTIONS, SEED_SOURCE_CHECK_ACTIVITY_OPTIONS } from './policies';

/** Operations recorded before this change did not check their repository before the first model call. */
export const SEED_SOURCE_CHECK_PATCH = 'check-seed-source-before-first-model-call';

/**
 * Asks the hands host whether the operation's repository may be read (exists, is a directory, lies
 * inside the worker's allowed roots; a git URL of an allowed form) before the first model call is
 * paid for. Returns how the operation ends when it may not: `failed` with
 * `InvalidSeedSource: <path and allowed roots>`. Runs once, on an operation's first run.
 */
export async function checkSeedSourceFirst(op: OperationRun): Promise<OperationEnd | undefined> {
  const { settings, carry } = op;
  if (!settings.repo || carry.runs > 1 || carry.turn > 0 || carry.seeded) return undefined;
  if (!patched(SEED_SOURCE_CHECK_PATCH)) return undefined;
  const hands = proxyActivities<HandsActivities>({ ...SEED_SOURCE_CHECK_ACTIVITY_OPTIONS, taskQueue: op.handsQueue });
  try {
    await hands.checkSeedSource({ source: settings.repo });
    return undefined;
  } catch (err) {
    if (isCancellation(err)) return new OperationEnd('aborted', `aborted: ${op.abortReason ?? 'workflow cancelled'}`);
    const cause = err instanceof ActivityFailure ? err.cause : err;
    if (cause instanceof ApplicationFailure && cause.type === HANDS_FAILURE_TYPES.invalidSeedSource) {
      return new OperationEnd('failed', `${cause.type}: ${cause.message}`);
    }
    const type = cause instanceof ApplicationFailure && cause.type ? ` [${cause.type}]` : '';
    return new OperationEnd('failed', `the repository could not be checked${type}: ${(cause as Error).message}`);
  }
}

export interface OperationSandbox {
  /** Resolves when the workspace is ready for a tool call (seeded from the repository, if any). */
  ready(): Promise<void>;
  /** Removes the container if the operation used one and was not asked to keep it. */
  teardown(): Promise<void>;
}

/** `eager: false` overrides the operation's `eagerSandbox` (an operation that already ended provisions nothing). */
export function provisionSandbox(op: OperationRun, options: { eager?: boolean } = {}): OperationSandbox {
  const { settings, carry } = op;
  const hands = proxyActivities<HandsActivities>({
    ...SANDBOX_ACTIVITY_OPTIONS,
    ...heartbeatOverride(op),
    taskQueue: op.handsQueue,
  });
  const ref = { sessionId: op.sessionId, operationId: op.operationId };

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
  const eager = settings.eagerSandbox && options.eager !== false && !carry.sandboxUsed ? startEagerly() : undefined;
  // An eager failure surfaces at the first tool call, which awaits the same promise.
  eager?.catch(() => undefined);

  return {
    ready: () => eager ?? ensureWorkspace(),
    async teardown() {
      if (!carry.sandboxUsed || settings.keepContainer) return;
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
