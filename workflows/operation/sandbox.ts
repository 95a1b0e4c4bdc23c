/**
 * The operation's side of the sandbox lifecycle: the check of the repository to seed (on the hands
 * host, once the first model call has answered: `seed-check.ts`), provisioning (lazy by default — the first tool call seeds the
 * workspace, which creates the container — or eager, alongside the first model call), routing to the
 * hands host that holds the workspace (`../shared/hands-route.ts`), and teardown (the container goes, the
 * workspace volume stays). An operation run by a session uses the sandbox under the session's lease
 * (`sandbox-lease.ts`), which also tells it the session's hands host, and leaves the teardown to the
 * session; a subagent operation leaves it to the operation that started it.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import { isPatched } from '../shared/patches';
import type { EnvironmentActivities } from '../../common/environment';
import { HANDS_FAILURE_TYPES, type HandsActivities } from '../../common/hands';
import { replaceHandsHostUpdate } from '../../common/hands-route';
import { HandsRoute } from '../shared/hands-route';
import { heartbeatOverride, OperationEnd, type OperationRun } from './state';
import {
  ENVIRONMENT_ACTIVITY_OPTIONS,
  SANDBOX_ACTIVITY_OPTIONS,
  SANDBOX_TEARDOWN_ACTIVITY_OPTIONS,
  SEED_SOURCE_CHECK_ACTIVITY_OPTIONS,
} from '../shared/policies';
import { sandboxLease, type SandboxLease } from './sandbox-lease';
import { acceptRepositoryHooks } from './repository-hooks';
import { stuckDetectionOn, watchActivity } from './stuck';
import { showDetails } from './visibility';

export const HANDS_ROUTING_PATCH = 'hands-routing';
/** Operations recorded before environments seeded straight into the default image. */
export const WORKSPACE_ENVIRONMENT_PATCH = 'workspace-environment';
/** Operations recorded before this change did not check their repository before the first model call. */
export const SEED_SOURCE_CHECK_PATCH = 'check-seed-source-before-first-model-call';

export interface OperationSandbox {
  /**
   * Asks the hands host whether the operation's repository may be read (exists, is a directory, lies
   * inside the worker's allowed roots; a git URL of an allowed form) before any tool runs. Returns how the operation ends when it may not: `failed` with
   * `InvalidSeedSource: <path and allowed roots>`. Checks once, on an operation's first run.
   */
  checkSeedSource(): Promise<OperationEnd | undefined>;
  /** Starts the workspace now when the operation asked for an eager sandbox (`eagerSandbox`). */
  startEagerly(): void;
  /**
   * Runs `fn` (a tool call) once the workspace is ready (seeded from the repository, if any) and the
   * operation holds the sandbox (the session's lease, when a session runs it).
   */
  use<T>(fn: () => Promise<T>): Promise<T>;
  /** Where the session's hands calls go. */
  readonly route: HandsRoute;
  /** Gives the sandbox back; removes the container if this operation owns it, used it and was not asked to keep it. */
  teardown(): Promise<void>;
}

export function provisionSandbox(op: OperationRun): OperationSandbox {
  const watched = stuckDetectionOn();
  const route = handsRouteOf(op);
  acceptHostReplacement(route);
  const sandbox: SandboxParts = { op, watched, route, lease: sandboxLease(op) };
  let eager: Promise<void> | undefined;
  return {
    route,
    checkSeedSource: () => checkSeedSource(sandbox),
    startEagerly() {
      // Lazy by default: the first model request never waits for a container.
      if (!op.settings.eagerSandbox || op.carry.sandboxUsed || eager) return;
      eager = sandbox.lease.use(() => startEagerly(sandbox));
      // An eager failure surfaces at the first tool call, which awaits the same promise.
      eager.catch(() => undefined);
    },
    use: (fn) =>
      sandbox.lease.use(async () => {
        await eager;
        await ensureWorkspace(sandbox);
        return fn();
      }),
    teardown: () => teardown(sandbox),
  };
}

/** What the sandbox's steps share. */
interface SandboxParts {
  op: OperationRun;
  /** Stuck detection is on: hands calls get ids and summaries, and are watched. */
  watched: boolean;
  route: HandsRoute;
  lease: SandboxLease;
}

/** Where the operation's hands calls go; the operation's state records the host chosen or given up. */
function handsRouteOf(op: OperationRun): HandsRoute {
  return new HandsRoute({
    sharedQueue: op.handsQueue,
    session: { sessionId: op.sessionId, operationId: op.operationId },
    // Giving the host up also means seeding the workspace again on the next one.
    host: {
      current: () => op.carry.handsHost,
      record: (host) => (host ? op.claimHandsHost(host) : op.giveUpHandsHost()),
    },
    routing: isPatched(HANDS_ROUTING_PATCH),
    watch: (activityId, queue, run) =>
      watchActivity(op, { activityId, taskQueue: queue, waitingOn: 'a hands host' }, run),
    onChange: () => showDetails(op),
  });
}

/** The sandbox lifecycle activities on `queue` (with an id and summary under stuck detection). */
function lifecycle({ op, watched }: SandboxParts, queue: string, activityId: string, summary: string) {
  return proxyActivities<HandsActivities>({
    ...SANDBOX_ACTIVITY_OPTIONS,
    ...heartbeatOverride(op),
    taskQueue: queue,
    ...(watched ? { activityId, summary } : {}),
  });
}

/** Runs a hands call on the routed host, watched for being stuck (`what` it waits on) when detection is on. */
function onHost<T>(
  { op, watched, route }: SandboxParts,
  activityId: string,
  what: string,
  run: (queue: string) => Promise<T>,
): Promise<T> {
  return route.call((queue) =>
    watched
      ? watchActivity(op, { activityId, taskQueue: queue, waitingOn: what, host: route.host?.host }, () => run(queue))
      : run(queue),
  );
}

/**
 * The workspace: its environment prepared (once: the image its containers run, built on the hands
 * host unless its hash exists), seeded from the repository (once) when the operation has one, and
 * set up by the environment's update commands (once per workspace).
 */
async function ensureWorkspace(sandbox: SandboxParts): Promise<void> {
  const { op, route } = sandbox;
  const source = op.settings.repo;
  op.useSandbox();
  if (op.environmentFailure) throw ApplicationFailure.nonRetryable(op.environmentFailure, 'EnvironmentUnavailable');
  const wanted = source !== undefined || op.settings.environment !== undefined;
  if (wanted && !op.carry.environment && isPatched(WORKSPACE_ENVIRONMENT_PATCH)) await prepareEnvironment(sandbox);
  if (source && !op.carry.seeded) {
    const what = `seed the workspace from ${source.kind === 'local' ? source.path : source.url}`;
    const id = `seed-workspace-${route.decisions.length}`;
    await onHost(sandbox, id, what, (queue) =>
      lifecycle(sandbox, queue, id, what).seedWorkspace({ ...sessionRef(op), source }),
    );
    op.markSeeded();
  }
  const update = op.carry.environment?.update ?? [];
  if (update.length && !op.carry.workspaceSetUp) await setUpWorkspace(sandbox, [...update]);
}

/** Where the dependency cache of a repository is keyed (the hands host digests it). */
function cacheKeyOf(source: NonNullable<OperationRun['settings']['repo']>): string {
  return source.kind === 'local' ? `local:${source.path}` : `git:${source.url}`;
}

/** The environment activities on `queue`, with the environment preset. */
function environmentCalls({ watched }: SandboxParts, queue: string, activityId: string, summary: string) {
  return proxyActivities<EnvironmentActivities>({
    ...ENVIRONMENT_ACTIVITY_OPTIONS,
    taskQueue: queue,
    ...(watched ? { activityId, summary } : {}),
  });
}

/** Runs an environment step; a failure ends the operation (`failEnvironment`) after the tool call reports it. */
async function environmentStep<T>(sandbox: SandboxParts, what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (!isCancellation(err) && sandbox.op.abortReason === undefined) {
      const cause = err instanceof ActivityFailure ? err.cause : err;
      const type = cause instanceof ApplicationFailure && cause.type ? `${cause.type}: ` : '';
      sandbox.op.failEnvironment(`${what} failed: ${type}${(cause as Error).message}`);
    }
    throw err;
  }
}

async function prepareEnvironment(sandbox: SandboxParts): Promise<void> {
  const { op, route } = sandbox;
  const source = op.settings.repo;
  const id = `prepare-environment-${route.decisions.length}`;
  const what = 'prepare the environment';
  const prepared = await environmentStep(sandbox, 'preparing the environment', () =>
    onHost(sandbox, id, what, (queue) =>
      environmentCalls(sandbox, queue, id, what).prepareEnvironment({
        ...sessionRef(op),
        ...(source ? { repository: { kind: 'seed', source }, cacheKey: cacheKeyOf(source) } : {}),
        ...(op.settings.environment !== undefined ? { environment: op.settings.environment } : {}),
        live: true,
      }),
    ),
  );
  op.recordEnvironment(prepared);
  showDetails(op);
}

async function setUpWorkspace(sandbox: SandboxParts, commands: string[]): Promise<void> {
  const { op, route } = sandbox;
  const id = `set-up-workspace-${route.decisions.length}`;
  const what = `set the workspace up (${commands.length} update command${commands.length === 1 ? '' : 's'})`;
  await environmentStep(sandbox, 'setting the workspace up', () =>
    onHost(sandbox, id, what, (queue) =>
      environmentCalls(sandbox, queue, id, what).setUpWorkspace({ ...sessionRef(op), commands }),
    ),
  );
  op.markWorkspaceSetUp();
}

/** The eager start: the seeded workspace, or an empty sandbox without a repository. */
function startEagerly(sandbox: SandboxParts): Promise<void> {
  const { op } = sandbox;
  if (op.settings.repo) return ensureWorkspace(sandbox);
  return onHost(sandbox, 'ensure-sandbox', 'create the sandbox', (queue) =>
    lifecycle(sandbox, queue, 'ensure-sandbox', 'create the sandbox').ensureSandbox(sessionRef(op)),
  ).then(() => op.useSandbox());
}

const sessionRef = (op: OperationRun) => ({ sessionId: op.sessionId, operationId: op.operationId });

/** `OperationSandbox.checkSeedSource`. */
async function checkSeedSource(sandbox: SandboxParts): Promise<OperationEnd | undefined> {
  const { op, watched, lease } = sandbox;
  const { carry } = op;
  const source = op.settings.repo;
  if (!source || carry.runs > 1 || carry.turn > 0 || carry.seeded) return undefined;
  if (!isPatched(SEED_SOURCE_CHECK_PATCH)) return undefined;
  const what = 'check the repository to seed';
  try {
    // Under the session's lease: the host that checks the path is the one that seeds it.
    const checked = await lease.use(() =>
      onHost(sandbox, 'check-seed-source', what, (queue) =>
        proxyActivities<HandsActivities>({
          ...SEED_SOURCE_CHECK_ACTIVITY_OPTIONS,
          taskQueue: queue,
          ...(watched ? { activityId: 'check-seed-source' } : {}),
        }).checkSeedSource({ source }),
      ),
    );
    // hooks: the repository's own, when the hands worker allows them (no new command either way).
    return acceptRepositoryHooks(op, checked.repositoryHooks);
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

/** `OperationSandbox.teardown`. */
async function teardown({ op, watched, route, lease }: SandboxParts): Promise<void> {
  const { settings } = op;
  lease.end();
  const ownsSandbox = !settings.session && !settings.lineage;
  if (!ownsSandbox || !op.carry.sandboxUsed || settings.keepContainer) return;
  await CancellationScope.nonCancellable(async () => {
    try {
      const queue = route.knownQueue();
      if (queue === undefined) return; // no host was ever chosen: nothing to remove
      const summary = `remove the container of ${op.sessionId} (keep the workspace volume)`;
      const { destroySandbox } = proxyActivities<HandsActivities>({
        ...SANDBOX_TEARDOWN_ACTIVITY_OPTIONS,
        ...heartbeatOverride(op),
        taskQueue: queue,
        ...(watched ? { summary } : {}),
      });
      await destroySandbox({ sessionId: op.sessionId, keepVolume: true });
    } catch {
      // A container left behind is listed by `agent sandbox ls` and `agent doctor`, and removed by `agent sandbox gc`.
    }
  });
}

/** The `replaceHandsHost` Update: the recorded decision to give a lost hands host up. */
function acceptHostReplacement(route: HandsRoute): void {
  setHandler(
    replaceHandsHostUpdate,
    ({ reason }) => {
      const lostHost = route.replace(reason.trim());
      return { accepted: true as const, lostHost };
    },
    {
      validator: (request) => {
        if (typeof request?.reason !== 'string' || !request.reason.trim())
          throw new Error('reason: must be a non-empty string (why the workspace on the old host is given up)');
        if (!route.host) throw new Error('no hands host has been chosen yet: nothing to replace');
      },
    },
  );
}
