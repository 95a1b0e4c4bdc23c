/**
 * The `agent` command. Parses with `cli/args.ts`, talks to Temporal through the environment's
 * connection settings, and prints errors as one line. A command's own modules (workers, Docker, the
 * local server, sessions, schedules…) are loaded when it runs, so help, usage errors and the
 * operation commands do not pay for the others' imports.
 */
import { WorkflowHandle, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { operationResult } from '../client/operation-result';
import { totalTokens } from '../common/model-types';
import { abortUpdate, compactUpdate, statusQuery, steerUpdate } from '../common/operation';
import { connectClient, temporalSettings, workflowUrl } from '../client/connection';
import { runMain } from '../client/main';
import { AgentCommand, HELP, parseAgentArgs, UsageError } from './args';
import { formatElapsed, formatProgress, formatTokens } from './follow';
import { CODING_TASK_WORKFLOW_TYPE } from '../common/coding-task';
import { sendUntilAdmitted } from '../client/update-admission';

/** Progress line while the server refuses an Update because the workflow's task is being retried. */
function waitingForWorkflowTask(): void {
  console.error('the workflow task is being retried (a worker died or timed out); sending again until it is accepted…');
}

export async function main(argv: string[]): Promise<number> {
  let command: AgentCommand;
  try {
    command = parseAgentArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    // A usage mistake: one line naming the argument, exit code 2 (as `agent sandbox` does).
    console.error(`error: ${err.message}`);
    return 2;
  }
  switch (command.kind) {
    case 'help':
      console.log(HELP);
      return 0;
    case 'run':
      return (await import('./run')).run(command);
    case 'status':
      return status(command.id, command.json);
    case 'abort':
      return withHandle(
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
      return diff(command.id);
    case 'report': {
      const { client, connection } = await connectClient();
      try {
        const { reportCommand } = await import('./report');
        return await reportCommand(client, command.id, command);
      } finally {
        await connection.close();
      }
    }
    case 'compact':
      return compact(command.id, command.reason);
    case 'worker':
      return worker(command.role);
    case 'server':
      return server(command.action);
    case 'sandbox':
      return (await import('./sandbox')).sandboxCommand(command.args);
    case 'setup':
      return (await import('./setup')).setupCommand();
    case 'doctor':
      return (await import('./doctor')).doctorCommand(command.json);
    case 'task-start':
      return (await import('./task')).taskStart(command);
    case 'schedule-create':
    case 'schedule-ls':
    case 'schedule-pause':
    case 'schedule-unpause':
    case 'schedule-trigger':
    case 'schedule-delete':
      return (await import('./schedule')).scheduleCommand(command);
    case 'session':
      return (await import('./sessions')).sessionCommand(command);
    case 'events':
      return (await import('./events')).eventsCommand(command);
    case 'approve':
      return (await import('./sessions')).approveCommand(command);
    case 'fact':
      return (await import('./sessions')).factCommand(command);
  }
}

async function status(id: string, json: boolean): Promise<number> {
  return withHandle(id, async (handle) => {
    const description = await handle.describe();
    const url = workflowUrl(temporalSettings().namespace, id, description.runId);
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
  id: string,
  fn: (handle: WorkflowHandle) => Promise<number>,
  whenEnded?: string,
): Promise<number> {
  const { client, connection } = await connectClient();
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

async function diff(id: string): Promise<number> {
  return withHandle(id, async (handle) => {
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
async function compact(id: string, reason: string | undefined): Promise<number> {
  return withHandle(id, async (handle) => {
    const { status } = await handle.describe();
    if (status.name !== 'RUNNING') {
      throw new Error(`cannot compact ${id}: the operation has ended (${status.name.toLowerCase()})`);
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

async function worker(role: 'brain' | 'hands' | 'dev'): Promise<number> {
  const { startWorkers } = await import('../workers/run');
  const { handsHostSettings } = await import('../workers/hands-host');
  const started = await startWorkers(role);
  console.log(
    `${role} worker running on ${temporalSettings().address}` +
      `${started.queues.brain ? ` · brain queue ${started.queues.brain}` : ''}${started.queues.hands ? ` · hands queue ${started.queues.hands} · host ${handsHostSettings().host}` : ''}` +
      ' (Ctrl-C stops it gracefully)',
  );
  await started.run();
  await started.close();
  return 0;
}

async function server(action: 'start' | 'stop' | 'status'): Promise<number> {
  const { localServerSettings, startLocalServer, stopLocalServer } = await import('../platform/local-server');
  const { isTemporalServing } = await import('../platform/dev-server');
  const settings = localServerSettings();
  if (action === 'start') {
    const st = await startLocalServer(settings, (line) => console.log(line));
    console.log(`${st.reused ? 'reusing' : 'started'} Temporal on ${st.address} · Web UI ${st.uiUrl}`);
    return 0;
  }
  if (action === 'stop') {
    console.log((await stopLocalServer(settings)) ? 'stopped' : 'no server started by this checkout is running');
    return 0;
  }
  const up = await isTemporalServing(`${settings.ip}:${settings.port}`, settings.namespace);
  console.log(up ? `Temporal serving on ${settings.ip}:${settings.port}` : 'no Temporal server answers');
  return up ? 0 : 1;
}

if (require.main === module) runMain(main);
