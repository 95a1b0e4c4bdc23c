/**
 * Stuck detection for the activities a coding task itself waits on — the claim of a hands host, the
 * repository and workspace steps, the verification (limits: the input's `stuck`, as an operation's;
 * the watchdog: `../shared/stuck-watchdog.ts`). A task waiting on a hands queue nobody polls shows
 * `stuck` in its status, its details and `AgentStatus`, like an operation, and goes back to
 * `running` when a worker takes the call. Its operations watch themselves.
 *
 * New in the command sequence (the watchdog's timer, probes, explicit activity ids), so it runs only
 * in runs that took the `task-stuck-detection` patch (`state.ts`).
 */
import { proxyActivities, type ActivityInterfaceFor, type ActivityOptions } from '@temporalio/workflow';
import type { StuckState } from '../../common/stuck';
import { Watchdog, type WatchTarget } from '../shared/stuck-watchdog';
import type { TaskRun } from './state';
import { publishTaskAttributes, showTaskDetails } from './visibility';

const watchdogs = new WeakMap<TaskRun, Watchdog>();

/** Runs `run` (which schedules the activity `target.activityId`) under the task's stuck watch. */
export async function watchTaskActivity<T>(task: TaskRun, target: WatchTarget, run: () => Promise<T>): Promise<T> {
  let watchdog = watchdogs.get(task);
  if (!watchdog) {
    watchdog = new Watchdog({
      get limits() {
        return task.settings.stuck;
      },
      get stuck() {
        return task.stuck;
      },
      setStuck: (stuck) => setTaskStuck(task, stuck),
    });
    watchdogs.set(task, watchdog);
  }
  try {
    return await watchdog.watch(target, run);
  } finally {
    if (task.stuck?.waitingOn === target.waitingOn) setTaskStuck(task, undefined);
  }
}

/** The hands host's claim under the task's stuck watch (for the task's `HandsRoute`). */
export function claimWatch(task: TaskRun) {
  return <T>(activityId: string, taskQueue: string, run: () => Promise<T>): Promise<T> =>
    watchTaskActivity(task, { activityId, taskQueue, waitingOn: 'a hands host' }, run);
}

/**
 * The task's activities of one group (`options`: a preset and its queue): each call scheduled with
 * an id of its own under the stuck watch, or plainly in runs that predate it.
 */
export function taskActivities<A extends object>(
  task: TaskRun,
  options: ActivityOptions & { taskQueue: string },
): ActivityInterfaceFor<A> {
  if (!task.stuckWatch) return proxyActivities<A>(options);
  return new Proxy({} as ActivityInterfaceFor<A>, {
    get(_target, name) {
      if (typeof name !== 'string') return undefined;
      return (...args: unknown[]) => {
        task.watchedActivities += 1;
        const activityId = `${name}-${task.watchedActivities}`;
        const activity = proxyActivities<Record<string, (...input: unknown[]) => Promise<unknown>>>({
          ...options,
          activityId,
        })[name]!;
        const waitingOn = options.summary ?? name;
        return watchTaskActivity(task, { activityId, taskQueue: options.taskQueue, waitingOn }, () =>
          activity(...args),
        );
      };
    },
  });
}

function setTaskStuck(task: TaskRun, stuck: StuckState | undefined): void {
  const changed = task.stuck?.reason !== stuck?.reason || task.stuck?.lastFailure !== stuck?.lastFailure;
  task.stuck = stuck;
  if (!changed) return;
  publishTaskAttributes(task, 'state');
  showTaskDetails(task);
}
