/**
 * Declares a workflow type's versioning behaviour (`common/versioning.ts`) to the worker that runs it
 * — only to a versioned one: an unversioned worker's workflow tasks are refused by the server when
 * the code declares a behaviour. A versioned worker defines `VERSIONED_WORKER_GLOBAL` at the top of
 * its bundle (`workers/workers.ts`); the behaviour is read once per run as the worker loads it, and
 * decides only where the run's next workflow tasks go, never what the workflow does.
 */
import { setWorkflowOptions } from '@temporalio/workflow';
import { VERSIONED_WORKER_GLOBAL, WORKFLOW_VERSIONING, type VersioningBehaviour } from '../../common/versioning';

type WorkflowFunction = (...args: never[]) => Promise<unknown>;

export function declareVersioning<F extends WorkflowFunction>(workflowType: string, fn: F): F {
  const declared = WORKFLOW_VERSIONING[workflowType];
  if (!declared) throw new Error(`${workflowType} has no versioning behaviour in common/versioning.ts`);
  const options = (): { versioningBehavior?: VersioningBehaviour } =>
    onVersionedWorker() ? { versioningBehavior: declared.behaviour } : {};
  setWorkflowOptions(options, fn as unknown as (...args: unknown[]) => Promise<unknown>);
  return fn;
}

function onVersionedWorker(): boolean {
  return (globalThis as Record<string, unknown>)[VERSIONED_WORKER_GLOBAL] === true;
}
