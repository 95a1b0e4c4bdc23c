/** Checks that a worker serves a task queue before work is submitted to it. */
import type { Client } from '@temporalio/client';

export async function requirePollers(client: Client, taskQueue: string): Promise<void> {
  const description = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue },
  });
  if ((description.pollers ?? []).length === 0) {
    throw new Error(
      `no worker polls task queue ${taskQueue}: start one with \`agent worker dev\` (or pass --with-worker)`,
    );
  }
}
