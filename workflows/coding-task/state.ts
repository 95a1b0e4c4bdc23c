/**
 * The state of one coding-task run, in one object every step receives. `carry` is what survives
 * continue-as-new: the harness's record of the feature list (with the `passes` it set), the accepted
 * and pushed commits, per-feature progress and the ledger — small data, never a transcript.
 */
import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';
import { isPatched } from '../shared/patches';
import type { ApprovalDecisionInput, WaitingApproval } from '../../common/approvals';
import type { BudgetAsks } from '../../common/budget';
import {
  CODING_TASK_FAILURES,
  defaultTaskBranch,
  parseCodingTaskInput,
  type CodingTaskSettings,
  type CodingTaskStatus,
  type IntegrityNote,
  type LedgerEntry,
  type RevisionOutcome,
  type TaskCommit,
  type TaskPullRequestOutcome,
} from '../../common/coding-task';
import type { PreparedEnvironment } from '../../common/environment';
import type { Feature } from '../../common/feature-list';
import type { HandsHost } from '../../common/hands-route';
import type { HooksInput } from '../../common/hooks';
import { ZERO_USAGE, type TokenUsage } from '../../common/model-types';
import { sessionIdFor } from '../../common/sandbox-names';
import type { StuckState } from '../../common/stuck';
import { DEFAULT_HANDS_QUEUE } from '../../common/task-queues';
import { HandsRoute, type HandsRouteOptions } from '../shared/hands-route';

/** The `patched()` id of routing a task's repository activities to the hands host its workspace is on. */
export const TASK_HANDS_ROUTING_PATCH = 'task-hands-routing';
/** The `patched()` id of the task's own stuck detection (its hands activities watched, with explicit ids). */
export const TASK_STUCK_PATCH = 'task-stuck-detection';

export interface FeatureProgress {
  /** Operations started for the feature this run. */
  attempts: number;
  failures: number;
  lastError?: string;
  skipped?: boolean;
  passedThisRun?: boolean;
  commit?: string;
}

/** State carried across continue-as-new (field names are part of recorded histories: keep them). */
export interface TaskCarry {
  startedAtMs: number;
  runs: number;
  prepared?: { remote: string; startCommit: string; branchExisted: boolean; hostRepository: string };
  initializer: 'ran' | 'not needed' | 'not run';
  /** The harness's record of the feature list. */
  features: Feature[];
  /** The last commit the harness accepted (the branch must contain it). */
  accepted: string;
  /** Where the remote branch is as far as the task knows (null: not created yet). */
  pushed: string | null;
  progress: Record<string, FeatureProgress>;
  /** Features finished this run (passed or skipped), in order. */
  finished: string[];
  ledger: LedgerEntry[];
  integrity: IntegrityNote[];
  commits: TaskCommit[];
  unpushed: TaskCommit[];
  /** What the harness corrected after the last operation, for the next operation's goal. */
  corrections: string[];
  usage: TokenUsage;
  costUsd: number;
  sandboxUsed: boolean;
  /** The hands host holding the task's workspace (claimed by the first repository activity). */
  handsHost?: HandsHost;
  /** The workspace's environment (absent in runs recorded before environments). */
  environment?: PreparedEnvironment;
  /** Budget approvals asked so far and what the approved ones added (absent until the first). */
  budgetAsks?: BudgetAsks;
  /** The repository's own hooks, read at preparation where the hands worker allows them (`common/hooks.ts`). */
  repositoryHooks?: HooksInput;
  /** The branch has no feature list (a review round on a branch no task made): the guard and the commit leave it alone. */
  noFeatureList?: boolean;
  /** A review round's attempts and, once it ended, its outcome. */
  revision?: { attempts: number; lastError?: string; outcome?: RevisionOutcome };
  /** The branch's pull request, once the run opened or updated it. */
  pullRequest?: TaskPullRequestOutcome;
}

export type TaskEndState = 'completed' | 'failed' | 'aborted';

export class TaskEnd {
  constructor(
    readonly state: TaskEndState,
    readonly reason: string,
  ) {}
}

export interface TaskRun {
  readonly settings: CodingTaskSettings;
  readonly taskId: string;
  readonly sessionId: string;
  readonly branch: string;
  readonly handsQueue: string;
  /** Where the task's hands calls go: the host holding its workspace, the same for its operations. */
  readonly route: HandsRoute;
  readonly carry: TaskCarry;
  phase: CodingTaskStatus['phase'];
  current?: CodingTaskStatus['current'];
  abortReason?: string;
  ended?: TaskEnd;
  /** The run watches its own hands activities for being stuck (`stuck.ts`; runs that took the patch). */
  readonly stuckWatch: boolean;
  /** Set while an activity the task waits on is stuck. */
  stuck?: StuckState;
  /** Activities started under the stuck watch so far (their ids are numbered). */
  watchedActivities: number;
  /** A spent budget waiting for a person (`budget.ts`), and the decision once it came. */
  waitingApproval?: WaitingApproval;
  approvalDecision?: ApprovalDecisionInput;
}

/**
 * Validates the input (failing the workflow with `InvalidCodingTaskInput`) and sets up the run's
 * state; `watchClaim` runs the hands host's claim under the run's stuck watch.
 */
export function startTaskRun(
  rawInput: unknown,
  carry: TaskCarry | undefined,
  watchClaim: (task: TaskRun) => NonNullable<HandsRouteOptions['watch']>,
): TaskRun {
  const parsed = parseCodingTaskInput(rawInput);
  if (!parsed.ok) {
    throw ApplicationFailure.nonRetryable(
      `invalid coding task input: ${parsed.error}`,
      CODING_TASK_FAILURES.invalidInput,
    );
  }
  const settings = parsed.value;
  const taskId = workflowInfo().workflowId;
  const state = carry ?? newCarry();
  state.runs += 1;
  const sessionId = sessionIdFor(`task-${taskId}`);
  const handsQueue = settings.handsTaskQueue ?? DEFAULT_HANDS_QUEUE;
  const routing = isPatched(TASK_HANDS_ROUTING_PATCH);
  const stuckWatch = isPatched(TASK_STUCK_PATCH);
  const task: TaskRun = {
    settings,
    taskId,
    sessionId,
    branch: settings.branch ?? defaultTaskBranch(taskId),
    handsQueue,
    route: new HandsRoute({
      sharedQueue: handsQueue,
      session: { sessionId, operationId: taskId },
      host: {
        current: () => state.handsHost,
        record: (host) => {
          state.handsHost = host;
        },
      },
      routing,
      ...(stuckWatch ? { watch: (activityId, queue, run) => watchClaim(task)(activityId, queue, run) } : {}),
    }),
    carry: state,
    phase: 'preparing',
    stuckWatch,
    watchedActivities: 0,
  };
  return task;
}

function newCarry(): TaskCarry {
  return {
    startedAtMs: Date.now(),
    runs: 0,
    initializer: 'not run',
    features: [],
    accepted: '',
    pushed: null,
    progress: {},
    finished: [],
    ledger: [],
    integrity: [],
    commits: [],
    unpushed: [],
    corrections: [],
    usage: { ...ZERO_USAGE },
    costUsd: 0,
    sandboxUsed: false,
  };
}

/** The feature list the guard and the commits work with: none on a branch that has none. */
export function featureRecord(task: TaskRun): Feature[] | null {
  return task.carry.noFeatureList ? null : task.carry.features;
}

export function progressOf(task: TaskRun, featureId: string): FeatureProgress {
  let progress = task.carry.progress[featureId];
  if (!progress) task.carry.progress[featureId] = progress = { attempts: 0, failures: 0 };
  return progress;
}

/** A failure that ends the task with a reason a person understands. */
export function taskFailure(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, CODING_TASK_FAILURES.failed);
}
