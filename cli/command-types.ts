/**
 * The typed commands the `agent` command line parses into (`commands.ts` builds them; each handler
 * takes its own). Types only: the handlers import them from here, not from the table that imports
 * the handlers.
 */
import type { EgressPolicy } from '../common/egress';
import type { EnvironmentInput } from '../common/environment';
import type { HooksInput } from '../common/hooks';
import type { TaskSpecArgs } from './task-args';

export type RunCommand = {
  kind: 'run';
  goal: string;
  repo?: string;
  id?: string;
  model?: string;
  maxTurns?: number;
  /** `--ask-over-budget`: `budget.onExceeded: "ask"`. */
  askOverBudget?: boolean;
  detach: boolean;
  withWorker: boolean;
  eagerSandbox: boolean;
  keepContainer: boolean;
  /** The session (default: a new one; `--id` alone names both the session and the operation). */
  session?: string;
  lane?: string;
  /** `--new`: a fresh context in the lane. */
  newContext?: boolean;
  /** `--json`: one JSON line at the end, everything else on stderr. */
  json?: boolean;
  /** `--approvals '<json map>'` (validated with the operation input). */
  approvals?: string;
  approvalTimeoutMs?: number;
  /** `--egress none|registries|<host,…>|'<json>'` (`common/egress.ts`). */
  egress?: EgressPolicy;
  /** `--environment default|'<json>'` (`common/environment.ts`), for a new session. */
  environment?: EnvironmentInput;
  /** `--hooks '<json>'|<file>` (`common/hooks.ts`): the prompt's hooks. */
  hooks?: HooksInput;
};

export type TaskStartCommand = {
  kind: 'task-start';
  task: TaskSpecArgs;
  id?: string;
  detach: boolean;
  withWorker: boolean;
};

export type ScheduleCommand =
  | {
      kind: 'schedule-create';
      name: string;
      cron: string;
      timezone?: string;
      catchupWindowMs: number;
      pauseOnFailure: boolean;
      task: TaskSpecArgs;
    }
  | { kind: 'schedule-ls' }
  | { kind: 'schedule-pause'; name: string; note?: string }
  | { kind: 'schedule-unpause'; name: string; note?: string }
  | { kind: 'schedule-trigger'; name: string }
  | { kind: 'schedule-delete'; name: string };

export type TaskCommand = TaskStartCommand | ScheduleCommand;

export type SandboxCommand =
  | { kind: 'sandbox-ls' }
  | { kind: 'sandbox-rm'; sessionId: string; keepVolume: boolean }
  | { kind: 'sandbox-gc'; olderThanMs: number; volumes: boolean; environments: boolean }
  | { kind: 'sandbox-envs'; json: boolean };

export type SessionCommand =
  | { kind: 'session'; action: 'ls'; json: boolean }
  | { kind: 'session'; action: 'show'; sessionId: string; json: boolean };

export type EventsCommand = {
  kind: 'events';
  id: string;
  lane?: string;
  types?: string[];
  from?: number;
  to?: number;
  follow: boolean;
  json: boolean;
};

export type ApproveCommand = { kind: 'approve'; operationId: string; toolCallId: string; deny?: string };

export type FactCommand =
  | { kind: 'fact'; action: 'set'; sessionId: string; key: string; value: string }
  | { kind: 'fact'; action: 'get'; sessionId: string; key: string }
  | { kind: 'fact'; action: 'ls'; sessionId: string; json: boolean };

export type OperationCommand =
  | { kind: 'status'; id: string; json: boolean }
  | { kind: 'abort'; id: string; reason?: string }
  | { kind: 'steer'; id: string; text: string }
  | { kind: 'diff'; id: string }
  | { kind: 'report'; id: string; json: boolean; steps: boolean }
  | { kind: 'compact'; id: string; reason?: string };

/** `agent checkpoints <operation>` and `agent rewind <operation> --to-turn N` (`rewind.ts`). */
export type RewindCommand =
  | { kind: 'checkpoints'; operationId: string; json: boolean }
  | {
      kind: 'rewind';
      operationId: string;
      toTurn: number;
      lane?: string;
      prompt?: string;
      codeOnly: boolean;
      /** The new session's id (default: a new one). */
      session?: string;
      json: boolean;
    };

/** `agent pr …`, `agent webhook serve`, `agent forge poll` (`pull-requests.ts`). */
export type PullRequestCommand =
  | { kind: 'pr-ls'; json: boolean }
  | { kind: 'pr-status'; id: string; json: boolean }
  | { kind: 'pr-control'; id: string; action: 'pause' | 'resume' | 'end'; reason?: string }
  | { kind: 'webhook-serve'; host: string; port: number }
  | { kind: 'forge-poll'; repository: string; everyMs: number; stop: boolean };

/** `agent deploy …` (`deploy.ts`): Worker Versioning's rollout; `deployment` defaults to `AGENT_WORKER_DEPLOYMENT`. */
export type DeployCommand =
  | { kind: 'deploy-status'; deployment?: string; json: boolean }
  | { kind: 'deploy-set-current'; deployment?: string; buildId: string | null; allowNoPollers: boolean }
  | { kind: 'deploy-ramp'; deployment?: string; buildId: string; percent: number }
  | { kind: 'deploy-delete'; deployment?: string; buildId: string };

export type AgentCommand =
  | { kind: 'help'; topic?: readonly string[] }
  | RunCommand
  | TaskCommand
  | SandboxCommand
  | SessionCommand
  | EventsCommand
  | ApproveCommand
  | FactCommand
  | OperationCommand
  | RewindCommand
  | PullRequestCommand
  | DeployCommand
  | { kind: 'worker'; role: 'brain' | 'hands' | 'dev' }
  | { kind: 'server'; action: 'start' | 'stop' | 'status' }
  | { kind: 'setup' }
  | { kind: 'doctor'; json: boolean }
  | { kind: 'trace'; id: string; jaeger: string; json: boolean };

/** Most turns `--max-turns` may ask for (the operation's budget limit). */
