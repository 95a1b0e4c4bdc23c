/**
 * Worker Versioning: how each workflow type moves between builds of the workflow code when brain
 * workers run as versions of a Worker Deployment (`AGENT_WORKER_DEPLOYMENT`; the names a deployment
 * and a build may have are in `deployment-names.ts`). Without a deployment (the default) workers are unversioned and
 * none of this applies: every history replays on whatever code the workers run, through `patched()`.
 *
 * - `PINNED`: a run starts on the deployment's current (or ramping) version and completes there, even
 *   after another version becomes current; its children start on it too. Its code needs no
 *   `patched()` on a versioned deployment, provided the build id changes with the workflow code (the
 *   default build id is the bundle's hash). Its version's workers must run until it ends.
 * - `AUTO_UPGRADE`: a run moves to the current version at its next workflow task, so the new code
 *   replays its history: changes need `patched()`, exactly as on an unversioned deployment.
 *
 * docs/changing-workflow-code.md#worker-versioning has the table below with the reasoning, and says
 * which change needs what.
 */
import { CODING_TASK_WORKFLOW_TYPE } from './coding-task';
import { FORGE_EVENT_WORKFLOW_TYPE, FORGE_POLLER_WORKFLOW_TYPE } from './forge';
import { HEALTH_CHECK_WORKFLOW_TYPE } from './health';
import { OPERATION_WORKFLOW_TYPE } from './operation';
import { PULL_REQUEST_LOOP_WORKFLOW_TYPE } from './pull-request';
import { REWIND_WORKFLOW_TYPE } from './rewind';
import { SESSION_WORKFLOW_TYPE } from './session';

export type VersioningBehaviour = 'PINNED' | 'AUTO_UPGRADE';

export interface TypeVersioning {
  behaviour: VersioningBehaviour;
  /** How long a run lives and why this behaviour (the docs' table). */
  why: string;
}

/** Every workflow type `workflows/index.ts` registers, with its behaviour on a versioned worker. */
export const WORKFLOW_VERSIONING: Readonly<Record<string, TypeVersioning>> = {
  [OPERATION_WORKFLOW_TYPE]: {
    behaviour: 'PINNED',
    why: 'minutes to hours; the type with the most logic and the most patches. Its continue-as-new carries state its own code wrote, and its subagents (child operations) run on its build',
  },
  [CODING_TASK_WORKFLOW_TYPE]: {
    behaviour: 'PINNED',
    why: 'hours (an overnight run, bounded by its deadline budget); its operations start as its children and so run on its build, the whole night on one version of the code. Its continue-as-new stays on the build',
  },
  [FORGE_EVENT_WORKFLOW_TYPE]: {
    behaviour: 'PINNED',
    why: 'seconds: one webhook delivery or comment, read and answered',
  },
  [REWIND_WORKFLOW_TYPE]: {
    behaviour: 'PINNED',
    why: 'seconds: a plan, a restore, and the new session started',
  },
  [HEALTH_CHECK_WORKFLOW_TYPE]: {
    behaviour: 'PINNED',
    why: 'one activity',
  },
  [SESSION_WORKFLOW_TYPE]: {
    behaviour: 'AUTO_UPGRADE',
    why: 'days, idle between prompts: pinned, it would keep its first build running for as long as anyone may send it a prompt. Each prompt starts a pinned operation on the current build',
  },
  [PULL_REQUEST_LOOP_WORKFLOW_TYPE]: {
    behaviour: 'AUTO_UPGRADE',
    why: 'as long as its pull request is open (days, weeks); each round is a pinned coding task on the current build',
  },
  [FORGE_POLLER_WORKFLOW_TYPE]: {
    behaviour: 'AUTO_UPGRADE',
    why: 'until stopped (a timer loop that continues as new); each event it finds is a pinned forge event on the current build',
  },
};

/**
 * The behaviour of a type nobody declared (only the tests' own workflows): pinned, so it is never
 * moved onto code nobody checked it against.
 */
export const DEFAULT_VERSIONING_BEHAVIOUR: VersioningBehaviour = 'PINNED';

/**
 * The global a versioned worker defines at the top of its workflow bundle (`workers/workers.ts`), so
 * the workflow code declares its behaviour only to a worker that has a deployment: an unversioned
 * worker refuses every workflow task that declares one. `workflowInfo().currentDeploymentVersion` cannot
 * tell, because the SDK reads the options once, when a run is loaded, and a run replayed from its
 * start is loaded with the version of its first workflow task: a run started on a versioned worker,
 * replayed on an unversioned one, would declare a behaviour there and never take another step.
 */
export const VERSIONED_WORKER_GLOBAL = '__agentVersionedWorker';
