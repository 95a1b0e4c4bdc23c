/**
 * The worker's own view of a step, from the Temporal SDK's metrics (Prometheus text from the worker
 * process): how long the worker takes to run a workflow task, how long its calls to the server take
 * (completing a workflow task, completing an activity, heartbeats), and how many of them it made.
 * Together with the server's event times (`step-timeline.ts`) this splits a step's added time
 * between the worker and the server.
 */
import type { WorkerMetrics } from './results';
import { round } from './stats';

interface Histogram {
  sum: number;
  count: number;
}

/** Sums `<name>_sum` and `<name>_count` over the label sets that contain `labels`. */
function histogram(text: string, name: string, labels = ''): Histogram {
  const total = { sum: 0, count: 0 };
  for (const line of text.split('\n')) {
    const match = /^(\w+)_(sum|count)\{([^}]*)\} ([\d.e+-]+)$/.exec(line);
    if (!match || match[1] !== name || !match[3]!.includes(labels)) continue;
    total[match[2] as 'sum' | 'count'] += Number(match[4]);
  }
  return total;
}

const mean = (h: Histogram): number => (h.count ? round(h.sum / h.count, 2) : Number.NaN);

export async function scrapeWorkerMetrics(url: string): Promise<WorkerMetrics> {
  const text = await (await fetch(url)).text();
  const request = (operation: string) => histogram(text, 'temporal_request_latency', `operation="${operation}"`);
  const workflowTasks = histogram(text, 'temporal_workflow_task_execution_latency');
  const activities = histogram(text, 'temporal_activity_execution_latency');
  const heartbeats = request('RecordActivityTaskHeartbeat');
  return {
    workflowTasks: workflowTasks.count,
    workflowTaskExecutionMs: mean(workflowTasks),
    respondWorkflowTaskCompletedMs: mean(request('RespondWorkflowTaskCompleted')),
    respondActivityTaskCompletedMs: mean(request('RespondActivityTaskCompleted')),
    heartbeatCalls: heartbeats.count,
    heartbeatCallMs: mean(heartbeats),
    activities: activities.count,
    activityExecutionMs: mean(activities),
  };
}
