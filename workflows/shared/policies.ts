/**
 * Every timeout and retry preset of every activity the workflows run, in one table. Workflow code:
 * deterministic, imports only `common/` and `@temporalio/workflow`.
 *
 * | activity              | start→close        | heartbeat | attempts | waits              |
 * |-----------------------|--------------------|-----------|----------|--------------------|
 * | model call / step     | 10 min (30 min all)| 3 s       | 11       | 0.5 s ×2 … 60 s    |
 * | compaction (a model call) | the same       | 3 s       | 11       | 0.5 s ×2 … 60 s    |
 * | tool call             | tool's time + 2 min| 3 s       | 6        | 0.25 s ×3 … 30 s   |
 * | sandbox lifecycle     | 10 min             | 10 s      | 5        | 1 s ×2 … 30 s      |
 * | sandbox teardown      | 10 min; 2 min to start | 10 s  | 5        | 1 s ×2 … 30 s      |
 * | environment (build, workspace setup) | 2 h | 60 s   | 3        | 5 s ×2 … 60 s      |
 * | claim a hands host    | 1 min              | –         | 5        | 1 s ×2 … 30 s      |
 * | stuck check (probe)   | 30 s               | –         | 3        | 1 s ×2             |
 * | seed source check     | 30 s               | –         | 5        | 1 s ×2 … 10 s      |
 * | host git (clone, push)| 30 min             | 20 s      | 6        | 2 s ×2 … 60 s      |
 * | task workspace steps  | 10 min             | 20 s      | 5        | 1 s ×2 … 30 s      |
 * | task verification     | checks + 2 min     | 20 s      | 3        | 2 s ×2 … 30 s      |
 * | health echo           | 30 s               | –         | 3        | SDK default        |
 * | MCP tool listing      | servers' startup ×2 + 30 s | 3 s | 3       | 1 s ×2 … 10 s      |
 * | MCP tool call         | call + startup + 30 s | 3 s    | 3 (never), 5 (safe) | 0.5 s ×2 … 10 s |
 * | hook run              | hook's timeout + 1 min | 3 s   | 4        | 0.25 s ×3 … 30 s   |
 * | checkpoint            | 10 min             | 10 s      | 3        | 1 s ×2 … 30 s      |
 * | restore a checkpoint  | 30 min             | 10 s      | 5        | 1 s ×2 … 30 s      |
 * | plan a rewind         | 2 min              | –         | 5        | 1 s ×2 … 30 s      |
 * | forge API call        | 2 min              | –         | 8        | 1 s ×2 … 60 s (or the forge's retry-after) |
 *
 * An operation's `heartbeatTimeoutMs` overrides the heartbeat of its model, tool and sandbox calls.
 *
 * Failover budget (a worker SIGKILLed in the middle of a model or tool call, the operation moving
 * again on another worker within 5 s): the 3 s heartbeat timeout notices the dead worker (the
 * activities heartbeat every second and workers flush heartbeats every second, so a live worker has
 * two missed flushes of slack), the first retry waits 0.5 s (model) or 0.25 s (tool), and the retried
 * attempt clears the workflow's sticky queue (`activities/failover.ts`) so the next workflow task
 * does not wait for the dead worker. `npm run bench` measures it (recovery) and checks under load
 * (200 concurrent operations) that live workers never miss a heartbeat timeout.
 *
 * The retry options of model and tool calls list no `nonRetryableErrorTypes`: both activities
 * classify every failure at their boundary and mark the ones a retry cannot fix non-retryable
 * (`activities/model/classify.ts`, `activities/hands/failures.ts`). Listing them again would repeat
 * the list in every scheduled event of the history (about 200 bytes per step) for no effect.
 */
import { ActivityCancellationType, type ActivityOptions } from '@temporalio/workflow';
import { CHECKPOINT_FAILURE_TYPES } from '../../common/checkpoints';
import { MODEL_NON_RETRYABLE_FAILURE_TYPES } from '../../common/model-types';
import { HANDS_NON_RETRYABLE_FAILURE_TYPES } from '../../common/hands';
import { REPO_NON_RETRYABLE_FAILURE_TYPES } from '../../common/repo';
import { FORGE_NON_RETRYABLE_FAILURE_TYPES } from '../../common/forge';
import { HOOK_TIMEOUT_DEFAULT_S, HOOK_TIMEOUT_MAX_S, type Hook } from '../../common/hooks';
import { toolRunTimeoutMs, type ToolName } from '../../common/tools';

/**
 * Model calls (the operation's model step; the model boundary's `callModel` in tests).
 * - `startToCloseTimeout` 10 min — one attempt: a streamed answer of 16k tokens at a slow ~30
 *   tokens/s takes ~9 min. (A stream that goes silent is abandoned much sooner, after
 *   `AGENT_MODEL_IDLE_TIMEOUT_MS`, and retried.)
 * - `heartbeatTimeout` 3 s — the activity heartbeats every second from half a second in, and whenever
 *   usage arrives after that (workers flush heartbeats to the server every second), so a worker that
 *   died mid-call is noticed within 3 s and the call moves to another worker; heartbeats also deliver
 *   cancellation. A call that ends within half a second writes none (`activities/heartbeat.ts`).
 * - `scheduleToCloseTimeout` 30 min — every attempt and every wait between them: an API that stays
 *   down fails the step after half an hour rather than parking the operation forever.
 * - `retry.initialInterval` 0.5 s, `backoffCoefficient` 2, `maximumInterval` 60 s — waits of
 *   0.5, 1, 2, 4, 8, 16, 32, 60, 60, 60 s (~4 min in all; the Anthropic SDK's own retries also
 *   start at 0.5 s): a dead worker's call is retried at once, a 529 burst still gets minutes to
 *   pass. A 429 overrides the wait with the server's `retry-after` (`nextRetryDelay`), so rate
 *   limits are honoured exactly, not guessed.
 * - `retry.maximumAttempts` 11 — with the waits above, about as many as fit the 30 minutes.
 * - Not retried: 400/401/403/404/413 and other refusals, missing settings and harness bugs — the
 *   activity marks these failures non-retryable (`MODEL_NON_RETRYABLE_FAILURE_TYPES`).
 */
export const MODEL_CALL_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '3 seconds',
  scheduleToCloseTimeout: '30 minutes',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '60 seconds',
    maximumAttempts: 11,
  },
};

/**
 * The operation's model step: the model-call preset. No `summary`: the Web UI already names the
 * activity (`modelStep`), and a summary is stored in every scheduled event (~45 bytes per step).
 */
export const MODEL_STEP_ACTIVITY_OPTIONS: ActivityOptions = MODEL_CALL_ACTIVITY_OPTIONS;

/**
 * A compaction step: one model call (the summary), so the model-call preset — retried like any model
 * step; one that finally fails fails the operation with the reason. An empty summary is retried
 * (the model may answer differently); a context too small to compact is not.
 */
export const COMPACTION_ACTIVITY_OPTIONS: ActivityOptions = {
  ...MODEL_CALL_ACTIVITY_OPTIONS,
  retry: {
    ...MODEL_CALL_ACTIVITY_OPTIONS.retry,
    nonRetryableErrorTypes: [...MODEL_NON_RETRYABLE_FAILURE_TYPES, 'CompactionNotPossible', 'ContextMismatch'],
  },
  summary: 'compaction',
};

/**
 * One tool call on the hands queue, derived from the tool's catalogue entry.
 * - startToClose: the call's run time (`toolRunTimeoutMs`: bash's `timeout_ms` or the operation's
 *   default; the file and search tools at most 60 s) plus two minutes for container start and
 *   journal I/O.
 * - heartbeat 3 s: the hands heartbeat every second (and workers flush heartbeats every second), so
 *   a dead hands worker is noticed within 3 s.
 * - retries: 0.25 s → ×3 → 30 s (waits of 0.25, 0.75, 2.25, 6.75, 20.25 s), at most 6 attempts, for
 *   infrastructure failures only (a tool that fails is a result, not an error; the non-retryable
 *   ones are marked so by the hands). The first retry is quick because the usual cause is a dead
 *   worker whose call another worker can take over at once; the later waits give Docker half a
 *   minute to recover. Every replay policy gets the same budget: a retried attempt
 *   consults the workspace journal, so a `never` call is never run twice, and a `safe` or
 *   `idempotent` call whose earlier attempt finished returns that attempt's result.
 * - cancellation waits for the activity to confirm it killed its process (abort must leave nothing running).
 * - a call that records the turn's checkpoint after it runs (`withCheckpoint`) gets the checkpoint
 *   activity's ten minutes more: the first checkpoint of a large workspace reads every file.
 */
export function toolActivityOptions(
  name: ToolName,
  input: unknown,
  defaultTimeoutMs: number,
  withCheckpoint = false,
): ActivityOptions {
  return {
    startToCloseTimeout:
      toolRunTimeoutMs(name, input, defaultTimeoutMs) + 120_000 + (withCheckpoint ? CHECKPOINT_MS : 0),
    heartbeatTimeout: '3 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: '250 milliseconds',
      backoffCoefficient: 3,
      maximumInterval: '30 seconds',
      maximumAttempts: 6,
    },
  };
}

/** How long a checkpoint may take (`CHECKPOINT_ACTIVITY_OPTIONS`, and a tool call that records one). */
const CHECKPOINT_MS = 10 * 60_000;

/** Sandbox lifecycle: seed the workspace (a clone can take minutes), create or destroy the container. */
export const SANDBOX_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [...HANDS_NON_RETRYABLE_FAILURE_TYPES],
  },
};

/**
 * Sandbox teardown at the end of an operation: like the lifecycle preset, but it gives up when no
 * hands worker takes it within 2 minutes (a lost host must not keep a finished operation open; the
 * container it leaves is a `agent doctor` finding, removed by `agent sandbox gc`).
 */
export const SANDBOX_TEARDOWN_ACTIVITY_OPTIONS: ActivityOptions = {
  ...SANDBOX_ACTIVITY_OPTIONS,
  scheduleToStartTimeout: '2 minutes',
};

/**
 * Preparing a workspace's environment (`prepareEnvironment`: resolve, build the image unless its
 * hash exists) and running its update commands once (`setUpWorkspace`), on the workspace's hands host.
 * - `startToCloseTimeout` 2 h — a cold build installs toolchains and packages (a JDK and Maven: about
 *   a minute here; a large Dockerfile: much longer); a single step gives up after 30 min by itself.
 * - `heartbeatTimeout` 60 s — both heartbeat every second with their progress (`building environment
 *   <hash>: step 3/5 …`, what the Web UI shows on the pending activity); a dead worker is noticed
 *   within a minute and the retry rebuilds or reuses — a half-built image never counts as built.
 * - `retry.maximumAttempts` 3 — a wrong definition, a failing step or a failing update command is
 *   not retried (`EnvironmentInvalid`, `EnvironmentBuildFailed`, `WorkspaceSetupFailed`, marked so at
 *   the activity boundary); Docker or registry trouble is, twice.
 */
export const ENVIRONMENT_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '60 seconds',
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '60 seconds',
    maximumAttempts: 3,
  },
};

/** The first hands call of a session: whichever hands worker answers becomes its host. Instant. */
export const CLAIM_HOST_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
};

/**
 * The stuck check (`probePendingActivity` on the brain queue): two reads from the Temporal server.
 * A probe that fails is only a missed look; the watch tries again later.
 */
export const PROBE_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
};

/**
 * The hands host's check of the operation's repository (exists, is a directory, inside the allowed
 * roots), before the first model call: file-system lookups on the host, no container. A refusal
 * (`InvalidSeedSource`) is final; an unreachable hands worker gets a few quick retries.
 */
export const SEED_SOURCE_CHECK_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [...HANDS_NON_RETRYABLE_FAILURE_TYPES],
  },
  summary: 'check the repository to seed',
};

const REPO_NON_RETRYABLE = [...REPO_NON_RETRYABLE_FAILURE_TYPES, ...HANDS_NON_RETRYABLE_FAILURE_TYPES];

/**
 * A coding task's host-side git (`prepareRepository`, `pushBranch`): a clone or fetch of a large
 * repository can take many minutes; the activities heartbeat every 2 s, so a dead hands worker is
 * noticed within 20 s. Network failures are retried for about two minutes; a missing repository,
 * refused credentials, an unknown ref or spec path are not (`REPO_NON_RETRYABLE_FAILURE_TYPES`).
 * A push is made idempotent by the activity (it looks at the remote first), so retrying it is safe.
 */
export const HOST_GIT_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '20 seconds',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '60 seconds',
    maximumAttempts: 6,
    nonRetryableErrorTypes: REPO_NON_RETRYABLE,
  },
};

/**
 * Forge API calls (pull requests, comments, checks, permissions): seconds each, on the brain's
 * queue. A forge that is down or rate-limits is retried for about four minutes (a 429's or 503's
 * `retry-after` sets the wait); refused credentials, a missing repository or a refused request are
 * not (`FORGE_NON_RETRYABLE_FAILURE_TYPES`). Writes find what an earlier attempt wrote (the branch's
 * pull request, a comment's marker), so retrying them is safe.
 */
export const FORGE_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '60 seconds',
    maximumAttempts: 8,
    nonRetryableErrorTypes: [...FORGE_NON_RETRYABLE_FAILURE_TYPES],
  },
};

/**
 * The harness's own steps in a task's workspace (seed, snapshot, integrity guard, commit, shelve,
 * report): seconds each, converging when retried (see `common/repo.ts`).
 */
export const TASK_WORKSPACE_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '20 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 5,
    nonRetryableErrorTypes: REPO_NON_RETRYABLE,
  },
};

/**
 * The harness's verification of a feature: up to two commands of `verifyTimeoutMs` each, plus two
 * minutes. Re-running a verification converges, so a retry (after a lost container or worker) runs
 * it again; a failing check is a result, not an error.
 */
export function verifyActivityOptions(verifyTimeoutMs: number, checks: number): ActivityOptions {
  return {
    startToCloseTimeout: verifyTimeoutMs * Math.max(1, checks) + 120_000,
    heartbeatTimeout: '20 seconds',
    retry: {
      initialInterval: '2 seconds',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      maximumAttempts: 3,
      nonRetryableErrorTypes: REPO_NON_RETRYABLE,
    },
  };
}

/** The health check's echo: quick, a few tries. */
export const HEALTH_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 3 },
  summary: 'health echo',
};

/**
 * MCP (`common/mcp.ts`, run by the brain worker): listing the tools of an operation's servers once.
 * Each server gets its `startupTimeoutMs` to start and again to list; a server that fails to start
 * or times out is final (the activity marks it so), an unreachable HTTP server is retried.
 */
export function mcpListActivityOptions(startupTimeoutsMs: number[]): ActivityOptions {
  return {
    startToCloseTimeout: startupTimeoutsMs.reduce((sum, ms) => sum + 2 * ms, 30_000),
    heartbeatTimeout: '3 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 3 },
  };
}

/**
 * One MCP tool call: its `timeoutMs` plus the server's startup, plus slack. The activity marks what
 * a retry cannot fix non-retryable; a retried attempt of a `never` tool does not send the call again
 * (it answers `[interrupted: …]`, `activities/mcp/activities.ts`), so retries mostly serve dead
 * workers and read-only tools.
 */
export function mcpCallActivityOptions(
  server: { timeoutMs: number; startupTimeoutMs: number },
  replayPolicy: 'safe' | 'never',
): ActivityOptions {
  return {
    startToCloseTimeout: server.timeoutMs + server.startupTimeoutMs + 30_000,
    heartbeatTimeout: '3 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: '500 milliseconds',
      backoffCoefficient: 2,
      maximumInterval: '10 seconds',
      maximumAttempts: replayPolicy === 'safe' ? 5 : 3,
    },
  };
}

/**
 * One hook run (`runHook` on the hands queue of the session's host): a command in the sandbox, or a
 * host hook of the hands worker's.
 * - startToClose: the hook's `timeout` (default 60 s; a host hook's is its definition's, so the
 *   largest, 600 s) plus one minute for the container and the journal.
 * - heartbeat 3 s, as for a tool call: a dead hands worker is noticed within 3 s.
 * - retries: 0.25 s → ×3 → 30 s, at most 4 attempts, for infrastructure failures only (a hook that
 *   fails, times out or says no is a result, and its `onError` decides). Both replay policies get
 *   the same budget: a retried attempt reads the hook run's journal first, so a `never` hook is
 *   never run twice and one whose earlier attempt finished gives that attempt's result.
 * - cancellation waits for the activity to confirm it killed the hook's process.
 */
export function hookActivityOptions(hook: Hook): ActivityOptions {
  const timeoutS = hook.type === 'command' ? (hook.timeout ?? HOOK_TIMEOUT_DEFAULT_S) : HOOK_TIMEOUT_MAX_S;
  return {
    startToCloseTimeout: Math.round(timeoutS * 1000) + 60_000,
    heartbeatTimeout: '3 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: '250 milliseconds',
      backoffCoefficient: 3,
      maximumInterval: '30 seconds',
      maximumAttempts: 4,
    },
  };
}

/**
 * A checkpoint of the workspace after a turn that could change it (`checkpointWorkspace`, on the
 * workspace's hands host): git hashes what changed since the last one — well under a second for a
 * turn's edits, longer for the first checkpoint of a large repository. Heartbeats every second, so a
 * dead worker is noticed within 10 s; a retry records the same files again (a checkpoint changes
 * nothing in the workspace). One that finally fails is noted and the operation goes on without it.
 */
export const CHECKPOINT_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: CHECKPOINT_MS,
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 3,
    nonRetryableErrorTypes: [...HANDS_NON_RETRYABLE_FAILURE_TYPES],
  },
};

/**
 * Restoring a checkpoint into a new session's workspace (`restoreCheckpoint`, on the hands host that
 * holds the checkpoint): writes every file of the workspace once. A retry after a crash starts the
 * new workspace over, so it ends with the same files; an unknown checkpoint or a workspace that
 * exists already is final.
 */
export const RESTORE_CHECKPOINT_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [
      ...HANDS_NON_RETRYABLE_FAILURE_TYPES,
      CHECKPOINT_FAILURE_TYPES.unknownCheckpoint,
      CHECKPOINT_FAILURE_TYPES.workspaceExists,
    ],
  },
};

/**
 * Planning a rewind (`planRewind`, on the brain queue): reads the operation's history. What the
 * history cannot give (no such turn, no checkpoint) is final; an unreachable server is retried.
 */
export const REWIND_PLAN_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
  summary: 'plan the rewind',
};
