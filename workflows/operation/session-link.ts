/**
 * What an operation run by a session hears from it and tells it (besides the sandbox lease): changed
 * global facts arrive as signals and wait, like steering, for the next checkpoint; an accepted abort is
 * reported so the session cancels the lane's queued follow-ups.
 */
import { getExternalWorkflowHandle, setHandler } from '@temporalio/workflow';
import { operationAbortingSignal, sessionFactSignal } from '../../common/lanes';
import type { OperationRun } from './state';

export function listenToSession(op: OperationRun): void {
  setHandler(sessionFactSignal, ({ key, value }) => op.receiveFact(key, value));
}

export function reportAbortToSession(op: OperationRun): void {
  if (!op.settings.session || op.settings.lineage) return;
  // A session that no longer exists has no follow-ups to cancel.
  getExternalWorkflowHandle(op.settings.session.workflowId)
    .signal(operationAbortingSignal, { operationId: op.operationId, reason: op.abortReason ?? 'aborted' })
    .catch(() => undefined);
}
