/**
 * `agent setup`: makes a Temporal namespace ready for operations — checks the connection and the
 * namespace, registers the project's search attributes that are missing (idempotent: a second run
 * changes nothing), and says whether workers poll the brain and hands queues yet.
 */
import type { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { connectClient, type QueueSettings, type TemporalSettings } from '../client/connection';
import { registerSearchAttributes, searchAttributeState } from '../client/namespace-setup';
import { cliSettings, type CliSettings } from './settings';

export interface SetupDeps {
  /** The connection and the queues (default: the environment's). */
  settings?: CliSettings;
  out?: (line: string) => void;
}

export async function setupCommand(deps: SetupDeps = {}): Promise<number> {
  const { temporal: settings, queues } = deps.settings ?? cliSettings();
  const out = deps.out ?? ((line: string) => console.log(line));
  const { client, connection } = await connectClient(settings);
  try {
    await requireNamespace(connection, settings);
    out(`connected to ${settings.address}, namespace ${settings.namespace}`);
    const before = await searchAttributeState(connection, settings.namespace);
    if (before.conflicts.length) {
      throw new Error(
        `search attributes with the wrong type on namespace ${settings.namespace}: ${before.conflicts.join('; ')} — remove them (temporal operator search-attribute remove) and run agent setup again`,
      );
    }
    const added = await registerSearchAttributes(connection, settings.namespace).catch((err: Error) => {
      throw new Error(
        `could not register search attributes on ${settings.namespace} (${err.message}); on Temporal Cloud add them in the namespace's settings or with tcld (see docs/production.md)`,
      );
    });
    out(
      added.length
        ? `registered search attributes: ${added.join(', ')}`
        : `search attributes already registered (${before.present.length})`,
    );
    for (const line of await queueReport(client, queues)) out(line);
    return 0;
  } finally {
    await connection.close();
  }
}

async function requireNamespace(connection: Connection, settings: TemporalSettings): Promise<void> {
  await connection.workflowService.describeNamespace({ namespace: settings.namespace }).catch((err: Error) => {
    throw new Error(
      `namespace ${settings.namespace} is not usable on ${settings.address} (${err.message}): create it (temporal operator namespace create ${settings.namespace}) or set TEMPORAL_NAMESPACE`,
    );
  });
}

/** One line per queue: who polls it, or how to start a worker that does. */
export async function queueReport(client: Client, queues: QueueSettings): Promise<string[]> {
  const lines: string[] = [];
  const pollersOf = async (name: string, type: temporal.api.enums.v1.TaskQueueType) =>
    (
      await client.workflowService.describeTaskQueue({
        namespace: client.options.namespace,
        taskQueue: { name },
        taskQueueType: type,
      })
    ).pollers?.length ?? 0;
  const brain = await pollersOf(queues.brain, temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW);
  lines.push(
    brain
      ? `brain queue ${queues.brain}: ${brain} worker(s) poll it`
      : `brain queue ${queues.brain}: no worker polls it yet — start one: agent worker brain`,
  );
  const hands = await pollersOf(queues.hands, temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY);
  lines.push(
    hands
      ? `hands queue ${queues.hands}: ${hands} worker(s) poll it`
      : `hands queue ${queues.hands}: no worker polls it yet — start one per Docker host: agent worker hands`,
  );
  return lines;
}
