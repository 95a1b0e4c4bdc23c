/**
 * The floor's worker process: a brain worker (the floor workflow and its "model" activity) and a
 * hands worker (its "tool" activity) in one child process, as the harness's bench worker runs brain
 * and hands, with the harness's worker settings (`everyWorkerOptions`, the brain's sticky failover
 * and workflow-task slots from the same environment variables). argv[2] is a `WorkerProcessConfig`
 * as JSON; the process says `{ type: 'ready' }` over IPC once both workers poll and shuts down on
 * SIGTERM.
 */
import { setTimeout } from 'node:timers/promises';
import { Runtime, Worker, NativeConnection, bundleWorkflowCode } from '@temporalio/worker';
import { installRuntime } from '../../workers/runtime';
import { brainTuningFromEnv } from '../../workers/settings';
import { everyWorkerOptions } from '../../workers/workers';
import type { WorkerProcessConfig } from '../worker-process';
import type { FloorActivities } from './workflow';

async function main(config: WorkerProcessConfig): Promise<void> {
  installRuntime(process.env.AGENT_LOG_LEVEL ? undefined : 'ERROR');
  const connection = await NativeConnection.connect({ address: config.address });
  const bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('./workflow'),
    logger: Runtime.instance().logger,
  });
  const tuning = brainTuningFromEnv();
  const activities: FloorActivities = {
    floorModelStep: async (latencyMs) => {
      const started = Date.now();
      if (latencyMs > 0) await setTimeout(latencyMs);
      return started;
    },
    floorToolCall: () => Promise.resolve(),
  };
  const workers = [
    await Worker.create({
      connection,
      namespace: config.namespace,
      taskQueue: config.brainQueue,
      workflowBundle: bundle,
      activities: { floorModelStep: activities.floorModelStep },
      stickyQueueScheduleToStartTimeout: tuning.stickyFailoverMs,
      maxConcurrentWorkflowTaskExecutions: tuning.workflowTaskSlots,
      ...everyWorkerOptions(),
    }),
    await Worker.create({
      connection,
      namespace: config.namespace,
      taskQueue: config.handsQueue,
      activities: { floorToolCall: activities.floorToolCall },
      ...everyWorkerOptions(),
    }),
  ];
  const running = Promise.all(workers.map((worker) => worker.run()));
  process.send?.({ type: 'ready', monotonicUs: Number(process.hrtime.bigint() / 1000n) });
  process.on('message', (message: { type?: string }) => {
    // The bench asks every worker child for its event-loop delay; the floor's is not reported.
    if (message?.type === 'event-loop') process.send?.({ type: 'event-loop', p99Ms: 0, maxMs: 0 });
  });
  await running;
  await connection.close();
}

main(JSON.parse(process.argv[2] ?? '{}') as WorkerProcessConfig).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
