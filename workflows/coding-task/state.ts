/**
 * The state of one coding-task run, in one object every step receives. `carry` is what survives
 * continue-as-new: the harness's record of the feature list (with the `passes` it set), the accepted
 * and pushed commits, per-feature progress and the ledger — small data, never a transcript.
 */
import { ApplicationFailure, patched, workflowInfo } from '@temporalio/workflow';
import {
  CODING_TASK_FAILURES,
  defaultTaskBranch,
  parseCodingTaskInput,
  type CodingTaskSettings,
  type CodingTaskStatus,
  type IntegrityNote,
  type LedgerEntry,
  type TaskCommit,
} from '../../common/coding-task';
import type { PreparedEnvironment } from '../../common/environment';
import type { Feature } from '../../common/feature-list';
import type { HandsHost } from '../../common/hands-route';
import type { HooksInput } from '../../common/hooks';
import { ZERO_USAGE, type TokenUsage } from '../../common/model-types';
import { sessionIdFor } from '../../common/sandbox-names';
import { DEFAULT_HANDS_QUEUE } from '../../common/task-queues';
import { HandsRoute } from '../shared/hands-route';

/** The `patched()` id of routing a task's repository activities to the hands host its workspace is on. */
export const TASK_HANDS_ROUTING_PATCH = 'task-hands-routing';

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
  /** The repository's own hooks, read at preparation where the hands worker allows them (`common/hooks.ts`). */
  repositoryHooks?: HooksInput;
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
}

/** Validates the input (failing the workflow with `InvalidCodingTaskInput`) and sets up the run's state. */
export function startTaskRun(rawInput: unknown, carry: TaskCarry | undefined): TaskRun {
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
  return {
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
      routing: patched(TASK_HANDS_ROUTING_PATCH),
    }),
    carry: state,
    phase: 'preparing',
  };
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

export function progressOf(task: TaskRun, featureId: string): FeatureProgress {
  let progress = task.carry.progress[featureId];
  if (!progress) task.carry.progress[featureId] = progress = { attempts: 0, failures: 0 };
  return progress;
}

/** A failure that ends the task with a reason a person understands. */
export function taskFailure(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, CODING_TASK_FAILURES.failed);
}
