/**
 * The `agent` command. Parses with `cli/args.ts`, talks to Temporal through the environment's
 * connection settings, and prints errors as one line.
 */
import { WorkflowHandle, WorkflowNotFoundError } from '@temporalio/client';
import { operationResult } from '../client/operation-result';
import { totalTokens } from '../common/model-types';
import { abortUpdate, statusQuery, steerUpdate } from '../common/operation';
import { connectClient, temporalSettings, workflowUrl } from '../client/connection';
import { startWorkers } from '../workers/run';
import { isTemporalServing } from '../platform/dev-server';
import { localServerSettings, startLocalServer, stopLocalServer } from '../platform/local-server';
import { runMain } from '../client/main';
import { HELP, parseAgentArgs } from './args';
import { formatElapsed, formatProgress, formatTokens } from './follow';
import { eventsCommand } from './events';
import { run } from './run';
import { sandboxCommand } from './sandbox';
import { approveCommand, factCommand, sessionCommand } from './sessions';

export async function main(argv: string[]): Promise<number> {
  const command = parseAgentArgs(argv);
  switch (command.kind) {
    case 'help':
      console.log(HELP);
      return 0;
    case 'run':
      return run(command);
    case 'status':
      return status(command.id, command.json);
    case 'abort':
      return withHandle(command.id, async (handle) => {
        await handle.executeUpdate(abortUpdate, { args: [{ reason: command.reason }] });
        console.log(`abort accepted for ${command.id}: running tools are being stopped`);
        return 0;
      });
    case 'steer':
      return withHandle(command.id, async (handle) => {
        const accepted = await handle.executeUpdate(steerUpdate, { args: [{ text: command.text }] });
        console.log(
          `steering accepted for ${command.id} (queued #${accepted.position}); it enters the context at the next checkpoint`,
        );
        return 0;
      });
    case 'diff':
      return diff(command.id);
    case 'worker':
      return worker(command.role);
    case 'server':
      return server(command.action);
    case 'sandbox':
      return sandboxCommand(command.args);
    case 'session':
      return sessionCommand(command);
    case 'events':
      return eventsCommand(command);
    case 'approve':
      return approveCommand(command);
    case 'fact':
      return factCommand(command);
  }
}

async function status(id: string, json: boolean): Promise<number> {
  return withHandle(id, async (handle) => {
    const description = await handle.describe();
    const url = workflowUrl(temporalSettings().namespace, id, description.runId);
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

async function withHandle(id: string, fn: (handle: WorkflowHandle) => Promise<number>): Promise<number> {
  const { client, connection } = await connectClient();
  try {
    return await fn(client.workflow.getHandle(id));
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new Error(`no operation with id ${id}`);
    throw err;
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

async function worker(role: 'brain' | 'hands' | 'dev'): Promise<number> {
  const started = await startWorkers(role);
  console.log(
    `${role} worker running on ${temporalSettings().address}` +
      `${started.queues.brain ? ` · brain queue ${started.queues.brain}` : ''}${started.queues.hands ? ` · hands queue ${started.queues.hands}` : ''}` +
      ' (Ctrl-C stops it gracefully)',
  );
  await started.run();
  await started.close();
  return 0;
}

async function server(action: 'start' | 'stop' | 'status'): Promise<number> {
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
