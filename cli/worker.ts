/** `agent worker [brain|hands|dev]`: runs workers of the role until Ctrl-C (a graceful shutdown). */
import type { WorkerRole } from '../workers/settings';

export async function workerCommand(role: WorkerRole): Promise<number> {
  const { startWorkers } = await import('../workers/run');
  const started = await startWorkers(role);
  const { brain, hands } = started.queues;
  console.log(
    `${role} worker running on ${started.settings.temporal.address}` +
      `${brain ? ` · brain queue ${brain}` : ''}${hands ? ` · hands queue ${hands} · host ${started.host}` : ''}` +
      ' (Ctrl-C stops it gracefully)',
  );
  if (started.version)
    console.log(
      `version ${started.version.buildId} of the Worker Deployment ${started.version.deploymentName}: ` +
        `it gets new workflows once current (agent deploy set-current ${started.version.buildId}; agent deploy status shows where work runs)`,
    );
  await started.run();
  await started.close();
  return 0;
}
