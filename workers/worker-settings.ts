/**
 * The brain worker's tuning from the environment — `AGENT_STICKY_FAILOVER`,
 * `AGENT_WORKFLOW_TASK_SLOTS`, `AGENT_WORKFLOW_STACK_TRACES` — declared as settings
 * (`common/env-settings.ts`; their meanings and defaults are on the generated configuration page).
 *
 * The sticky failover trades two things. Shorter: a brain worker that dies while its workflows wait
 * (on a signal, on another host's tool call) hands them on sooner. Longer: a live worker that is
 * behind keeps its workflows instead of seeing them moved to the shared queue, where they are replayed
 * from their first event — extra work for a worker that is already behind. A worker that dies in the
 * middle of a model or tool call is not affected either way: the retried call releases its workflow at
 * once (`activities/failover.ts`). Raise it on a brain worker that runs far more operations than its
 * cores keep up with (`npm run bench` reports the sticky timeouts under load).
 *
 * Stack traces: for the Web UI's Stack Trace tab (the `__stack_trace` query), the Temporal SDK
 * records where every promise of a workflow was created — a JavaScript stack trace, mapped through
 * the bundle's source map, for each promise. `off` stops that recording (`WITHOUT_STACK_TRACES` in
 * `workers.ts`): the tab then shows no frames; errors thrown by workflow code keep their stacks.
 * The operation's `status` query and the pending activities say what it waits for either way.
 * On by default, decided from the figures: under load (200 operations × 20 steps at once on one
 * worker, `npm run bench -- --only floor,concurrency`, one run each on one machine) they are 3.2 of
 * the worker's 23.5 ms of CPU per step (20.3 off) and 1.6 steps/s in 24 (22.2 vs 23.8) — not what
 * keeps the worker above Temporal's floor (about 6 ms) — against the tab, which a person looking at a
 * stuck operation needs. A brain worker that runs far more than its cores sets it off.
 */
import { parseDuration } from '../common/duration';
import { onOff, parsed, readPart, settingsPart, variable, wholeNumber, type Environment } from '../common/env-settings';
import { buildIdProblem, deploymentNameProblem } from '../common/deployment-names';

export const WORKER_ENV = {
  stickyFailover: 'AGENT_STICKY_FAILOVER',
  workflowTaskSlots: 'AGENT_WORKFLOW_TASK_SLOTS',
  workflowStackTraces: 'AGENT_WORKFLOW_STACK_TRACES',
} as const;

export interface BrainWorkerSettings {
  stickyFailoverMs: number;
  workflowTaskSlots: number;
  /** Stack traces of waiting workflow code for the Web UI (`AGENT_WORKFLOW_STACK_TRACES`). */
  workflowStackTraces: boolean;
}

/**
 * Defaults. Sticky failover 5 s (the SDK's is 10 s): a dead worker's waiting workflows move on within
 * the recovery budget. Workflow-task slots 10 (the SDK's is 40): every workflow of the process runs in
 * one workflow thread, one activation after another; an activation takes a few milliseconds, so a
 * handful in flight keep that thread busy while the rest wait for their completion calls. More only
 * queue inside the worker, where the workflow-task timeout (10 s) is already running: under a load
 * of hundreds of operations on two cores, 40 queued tasks took over 5 s each and some timed out.
 * Tasks beyond the slots wait on the server, where no such timeout runs.
 */
export const DEFAULT_BRAIN_WORKER_SETTINGS: BrainWorkerSettings = {
  stickyFailoverMs: 5_000,
  workflowTaskSlots: 10,
  workflowStackTraces: true,
};

const STICKY_FAILOVER_RANGE_MS = { min: 1_000, max: 600_000 };
const WORKFLOW_TASK_SLOTS_RANGE = { min: 1, max: 200 };

/** The brain worker's tuning: sticky failover, workflow-task slots, stack traces. */
export const BRAIN_WORKER_PART = settingsPart({
  title: 'Workflow tasks',
  intro: 'How the brain worker runs workflow tasks (`workers/worker-settings.ts` explains the trade-offs).',
  variables: {
    stickyFailoverMs: variable(
      WORKER_ENV.stickyFailover,
      {
        description:
          "how long a workflow task waits for the worker that ran the workflow's previous task before any worker may take it. Shorter: a dead brain worker's waiting workflows move on sooner; longer: a live worker that is behind keeps its workflows instead of having them replayed elsewhere (raise it on a brain worker that runs far more operations than its cores keep up with)",
        default: '`5s`',
        values: 'a duration from 1 s to 10 min: `5s`, `30s`, `1m30s`, `2500ms`; a bare number is seconds',
      },
      parsed(
        (text) => {
          // A bare number is seconds here (a sticky failover in milliseconds is never meant).
          const ms = /^\d+(\.\d+)?$/.test(text) ? Number(text) * 1_000 : parseDuration(text);
          if (ms < STICKY_FAILOVER_RANGE_MS.min || ms > STICKY_FAILOVER_RANGE_MS.max)
            throw new Error(`${JSON.stringify(text)} is not between 1s and 10m`);
          return ms;
        },
        () => DEFAULT_BRAIN_WORKER_SETTINGS.stickyFailoverMs,
      ),
    ),
    workflowTaskSlots: variable(
      WORKER_ENV.workflowTaskSlots,
      {
        description:
          'workflow tasks the brain worker runs at once; more only queue inside the worker, where the workflow-task timeout is already running',
        default: '`10`',
        values: `a whole number from ${WORKFLOW_TASK_SLOTS_RANGE.min} to ${WORKFLOW_TASK_SLOTS_RANGE.max}`,
      },
      wholeNumber(DEFAULT_BRAIN_WORKER_SETTINGS.workflowTaskSlots, WORKFLOW_TASK_SLOTS_RANGE),
    ),
    workflowStackTraces: variable(
      WORKER_ENV.workflowStackTraces,
      {
        description:
          "`on`: the Web UI's Stack Trace tab shows where each operation waits; `off`: no frames there (errors thrown by workflow code keep their stacks), for a cheaper workflow task — the SDK records a stack trace for every promise a workflow creates (under 200 operations at once in `npm run bench`, 23.5 vs 20.3 ms of worker CPU per step)",
        default: '`on`',
        values: '`on`, `off`',
      },
      onOff(DEFAULT_BRAIN_WORKER_SETTINGS.workflowStackTraces),
    ),
  },
});

/** Reads the brain worker settings; throws one Error listing every problem, each naming its variable. */
export function readBrainWorkerSettings(env: Environment): BrainWorkerSettings {
  return readPart('brain worker', BRAIN_WORKER_PART, env);
}

/**
 * Worker Versioning (`common/versioning.ts`, docs/production.md#rolling-out-new-workflow-code): a brain
 * worker with a deployment name is one version of that Worker Deployment — its build id — and gets
 * the work the deployment routes to that version (`agent deploy`). Without one it is unversioned,
 * as every worker was before.
 */
export interface WorkerVersioning {
  /** The Worker Deployment (`AGENT_WORKER_DEPLOYMENT`); none: unversioned. */
  deployment?: string;
  /** The build id (`AGENT_WORKER_BUILD_ID`); none: `agent+<16 hex of the workflow bundle's hash>`. */
  buildId?: string;
}

const checked = (problem: (text: string) => string | undefined) =>
  parsed<string | undefined>(
    (text) => {
      const wrong = problem(text);
      if (wrong) throw new Error(wrong);
      return text;
    },
    () => undefined,
  );

const deploymentVariable = variable(
  'AGENT_WORKER_DEPLOYMENT',
  {
    description:
      'the Worker Deployment of the brain workers: a brain worker with one is a version of it (its build id), and `agent deploy` acts on it; every brain worker of a queue should have the same one',
    default: 'none: the worker is unversioned and runs whatever it is given',
    values: 'letters, digits, `-` and `_`, e.g. `agent-brain`',
  },
  checked(deploymentNameProblem),
);

export const WORKER_VERSIONING_PART = settingsPart({
  title: 'Worker Versioning',
  intro:
    'A brain worker with a deployment name is a version of that Worker Deployment: new workflows start on the version the deployment makes current (`agent deploy set-current`), and each workflow type is pinned to the version it started on or moves to the current one ([Changing workflow code](changing-workflow-code.md#worker-versioning)). Hands workers stay unversioned.',
  variables: {
    deployment: deploymentVariable,
    buildId: variable(
      'AGENT_WORKER_BUILD_ID',
      {
        description:
          'the build id the worker reports with every workflow task it completes and, with a deployment, its version: workers of one build id must run the same workflow code',
        default: "`agent+<16 hex digits of the workflow bundle's hash>`: it changes whenever the workflow code does",
        values: 'letters, digits, `.`, `+`, `-` and `_`, e.g. `v1.4.2`',
      },
      checked(buildIdProblem),
    ),
  },
  build: (values): WorkerVersioning => ({
    ...(values.deployment ? { deployment: values.deployment } : {}),
    ...(values.buildId ? { buildId: values.buildId } : {}),
  }),
});

/** The deployment `agent deploy` acts on unless `--deployment` names one. */
export const DEPLOYMENT_PART = settingsPart({
  title: 'Worker Deployment',
  variables: { deployment: deploymentVariable },
  build: (values): { deployment?: string } => (values.deployment ? { deployment: values.deployment } : {}),
});

/** Reads the worker's versioning settings; throws one Error naming every wrong variable. */
export function readWorkerVersioning(env: Environment): WorkerVersioning {
  return readPart('brain worker', WORKER_VERSIONING_PART, env);
}
