/**
 * `agent status | steer | abort | diff | report | compact <id>`: the commands on one operation (or a
 * coding task, for `status` and `report`).
 */
import { WorkflowHandle, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { connectClient, workflowUrl, type TemporalSettings } from '../client/connection';
import { operationResult } from '../client/operation-result';
import { sendUntilAdmitted } from '../client/update-admission';
import { CODING_TASK_WORKFLOW_TYPE } from '../common/coding-task';
import { totalTokens } from '../common/model-types';
import { abortUpdate, compactUpdate, statusQuery, steerUpdate } from '../common/operation';
import type { OperationCommand } from './command-types';
import { formatElapsed, formatProgress, formatTokens } from './follow';
import { cliSettings } from './settings';

/** Progress line while the server refuses an Update because the workflow's task is being retried. */
function waitingForWorkflowTask(): void {
  console.error('the workflow task is being retried (a worker died or timed out); sending again until it is accepted…');
}

export async function operationCommand(command: OperationCommand): Promise<number> {
  const { temporal } = cliSettings();
  switch (command.kind) {
    case 'status':
      return status(temporal, command.id, command.json);
    case 'abort':
      return withHandle(
        temporal,
        command.id,
        async (handle) => {
          await sendUntilAdmitted(
            (updateId) => handle.executeUpdate(abortUpdate, { args: [{ reason: command.reason }], updateId }),
            { onRefused: waitingForWorkflowTask },
          );
          console.log(`abort accepted for ${command.id}: running tools are being stopped`);
          return 0;
        },
        'there is nothing to abort',
      );
    case 'steer':
      return withHandle(
        temporal,
        command.id,
        async (handle) => {
          const accepted = await sendUntilAdmitted(
            (updateId) => handle.executeUpdate(steerUpdate, { args: [{ text: command.text }], updateId }),
            { onRefused: waitingForWorkflowTask },
          );
          console.log(
            `steering accepted for ${command.id} (queued #${accepted.position}); it enters the context at the next checkpoint`,
          );
          return 0;
        },
        'it takes no more steering',
      );
    case 'diff':
      return diff(temporal, command.id);
    case 'report': {
      const { client, connection } = await connectClient(temporal);
      try {
        const { reportCommand } = await import('./report');
        return await reportCommand(client, command.id, command);
      } finally {
        await connection.close();
      }
    }
    case 'compact':
      return compact(temporal, command.id, command.reason);
  }
}

async function status(temporal: TemporalSettings, id: string, json: boolean): Promise<number> {
  return withHandle(temporal, id, async (handle) => {
    const description = await handle.describe();
    const url = workflowUrl(temporal, id, description.runId);
    if (description.type === CODING_TASK_WORKFLOW_TYPE)
      return (await import('./task')).taskStatus(handle, description.status.name, json, url);
    if (description.status.name === 'RUNNING') {
      const st = await handle.query(statusQuery);
      if (json) console.log(JSON.stringify(st, null, 2));
      else
        console.log(
          `${id}: ${st.state} — ${formatProgress(st, Date.now() - Date.parse(st.startedAt))}\nWeb UI: ${url}`,
        );
      return 0;
    }
    const result = await operationResult(handle).catch((err: Error) => ({ error: err.message }));
    if (json) console.log(JSON.stringify(result, null, 2));
    else if ('error' in result)
      console.log(`${id}: ${description.status.name.toLowerCase()} — ${result.error}\nWeb UI: ${url}`);
    else {
      const took = description.closeTime
        ? formatElapsed(description.closeTime.getTime() - description.startTime.getTime())
        : '';
      console.log(
        `${id}: ${result.state} — ${result.reason} (${result.turns} turns, ${formatTokens(totalTokens(result.usage))} tokens${took ? `, ${took}` : ''})`,
      );
      if (result.finalText) console.log(result.finalText);
      console.log(`Web UI: ${url}`);
    }
    return 0;
  });
}

/**
 * Runs `fn` on the operation's handle. An operation that does not exist is one clear error line; so
 * is one that has ended, when `whenEnded` says what that means for the command (Updates to an ended
 * workflow fail as "not found" too).
 */
async function withHandle(
  temporal: TemporalSettings,
  id: string,
  fn: (handle: WorkflowHandle) => Promise<number>,
  whenEnded?: string,
): Promise<number> {
  const { client, connection } = await connectClient(temporal);
  const handle = client.workflow.getHandle(id);
  try {
    return await fn(handle);
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    const ended = whenEnded ? await handle.describe().catch(() => undefined) : undefined;
    if (ended) {
      // An aborted operation's workflow completed: its result says how the operation ended.
      const state = await operationResult(handle).then(
        (result) => result.state,
        () => ended.status.name.toLowerCase(),
      );
      throw new Error(`operation ${id} has already ended (${state}): ${whenEnded}`);
    }
    throw new Error(`no operation with id ${id}`);
  } finally {
    await connection.close();
  }
}

async function diff(temporal: TemporalSettings, id: string): Promise<number> {
  return withHandle(temporal, id, async (handle) => {
    // A running operation answers its status query; a finished one carries the session in its result.
    const running = (await handle.describe()).status.name === 'RUNNING';
    const sessionId = running ? (await handle.query(statusQuery)).sessionId : (await operationResult(handle)).sessionId;
    const { workspaceDiff } = await import('./workspace');
    const { stat, diff: text } = await workspaceDiff(sessionId);
    console.log(stat ? `${stat}\n\n${text}` : 'no changes in the workspace');
    return 0;
  });
}

/** `agent compact`: asks a running operation for a compaction at its next checkpoint. */
async function compact(temporal: TemporalSettings, id: string, reason: string | undefined): Promise<number> {
  return withHandle(temporal, id, async (handle) => {
    const { status: state } = await handle.describe();
    if (state.name !== 'RUNNING') {
      throw new Error(`cannot compact ${id}: the operation has ended (${state.name.toLowerCase()})`);
    }
    try {
      await sendUntilAdmitted(
        (updateId) => handle.executeUpdate(compactUpdate, { args: [reason === undefined ? {} : { reason }], updateId }),
        { onRefused: waitingForWorkflowTask },
      );
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError)
        throw new Error(`cannot compact ${id}: ${err.cause?.message ?? err.message}`);
      throw err;
    }
    console.log(`compaction requested for ${id}: it runs at the next checkpoint (after the current step)`);
    return 0;
  });
}
