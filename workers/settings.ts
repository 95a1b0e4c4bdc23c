/**
 * The workers' settings module: everything a brain worker, a hands worker, or both in one process
 * (`dev`) read from the environment. `workerSettings(role)` reads it all when the worker starts,
 * before it connects, and refuses to start with one error naming every wrong variable. The readers
 * below it give one part each to the worker factories' defaults (tests and the benchmark build
 * workers in-process). With the CLI's and the platform's, the one place that reads `process.env`.
 */
import * as path from 'node:path';
import type { LogLevel } from '@temporalio/worker';
import { CRASH_POINTS_PART, type CrashPointSettings } from '../activities/crash-points';
import { FORGES_PART, readForges, type Forges } from '../activities/forge/settings';
import { EGRESS_PART } from '../activities/egress/egress-host';
import { handsPart, readHandsSettings, type HandsSettings } from '../activities/hands/settings';
import { HOOKS_PART, readHookHostSettings, type HookHostSettings } from '../activities/hooks/settings';
import { MCP_PART, readMcpSettings, type McpHostSettings } from '../activities/mcp/settings';
import { MODEL_PART, type ModelSettings } from '../activities/model/settings';
import { TRACING_PART, type TracingSettings } from '../activities/tracing/settings';
import { repoPart, type RepoSettings } from '../activities/repo/settings';
import { loadSecretStore, SECRETS_PART, type SecretStore } from '../activities/secrets/store';
import { QUEUES_PART, CONNECTION_PART, type QueueSettings, type TemporalSettings } from '../client/connection-settings';
import {
  parsed,
  readingOfParts,
  readPart,
  settingsPart,
  SettingsError,
  text,
  variable,
  type Environment,
  type RuntimeSettings,
  type SettingsPart,
} from '../common/env-settings';
import { DATA_DIR } from '../platform/paths';
import { DOCKER_PART, PATHS_PART, SANDBOX_IMAGE_PART, SANDBOX_TOOLS_PART } from '../platform/settings';
import { sandboxImageTag } from '../platform/sandbox-image';
import { HANDS_HOST_PART, type HandsHost } from './hands-host';
import {
  BRAIN_WORKER_PART,
  readBrainWorkerSettings,
  readWorkerVersioning,
  WORKER_VERSIONING_PART,
  type BrainWorkerSettings,
  type WorkerVersioning,
} from './worker-settings';

export type WorkerRole = 'brain' | 'hands' | 'dev';

const LOG_LEVELS: readonly LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

/** What every worker process reads besides the connection and the queues. */
export const WORKER_PROCESS_PART = settingsPart({
  title: 'Worker process',
  variables: {
    logLevel: variable(
      'AGENT_LOG_LEVEL',
      {
        description: "the Temporal SDK's log level in a worker process (its state changes, retries, warnings)",
        default: '`WARN`',
        values: LOG_LEVELS.map((level) => `\`${level}\``).join(', ') + ' (any case)',
      },
      parsed(
        (value): LogLevel => {
          const level = LOG_LEVELS.find((known) => known === value.toUpperCase());
          if (!level) throw new Error(`${JSON.stringify(value)} is not one of ${LOG_LEVELS.join(', ')}`);
          return level;
        },
        (): LogLevel => 'WARN',
      ),
    ),
    metricsAddress: variable(
      'AGENT_METRICS_ADDRESS',
      {
        description:
          "where the worker serves Prometheus metrics (`GET /metrics`): the Temporal SDK's and the harness's own (tokens, cost, model and tool latency, retries, compactions, egress refusals, live sandboxes; docs/operations.md lists them)",
        default: 'none: no metrics endpoint',
        values: '`host:port`, e.g. `0.0.0.0:9464` or `127.0.0.1:9464`',
      },
      parsed(
        (value): string => {
          const match = /^(.+):(\d{1,5})$/.exec(value);
          if (!match || Number(match[2]) > 65_535) throw new Error(`${JSON.stringify(value)} is not host:port`);
          return value;
        },
        (): string | undefined => undefined,
      ),
    ),
  },
});

/** The brain's workflow code: bundled at start, or a bundle built before. */
export const WORKFLOW_BUNDLE_PART = settingsPart({
  title: 'Workflow code',
  variables: {
    bundle: variable(
      'AGENT_WORKFLOW_BUNDLE',
      {
        description:
          'a prebuilt workflow bundle the brain worker loads instead of bundling `workflows/` at start (the tests and the benchmark build one per run)',
        default: 'none: bundled at start',
        values: 'a path to a bundle file',
      },
      text(undefined),
    ),
  },
});

const handsSettingsPart = () => handsPart({ imageDir: path.join(DATA_DIR, 'workspaces') });
const repoSettingsPart = () => repoPart({ tasksDir: path.join(DATA_DIR, 'tasks') });

const common = () => ({
  temporal: CONNECTION_PART,
  queues: QUEUES_PART,
  process: WORKER_PROCESS_PART,
  tracing: TRACING_PART,
  crashPoints: CRASH_POINTS_PART,
  forges: FORGES_PART,
});
const brainParts = () => ({
  tuning: BRAIN_WORKER_PART,
  code: WORKFLOW_BUNDLE_PART,
  versioning: WORKER_VERSIONING_PART,
  model: MODEL_PART,
  mcp: MCP_PART,
  secrets: SECRETS_PART,
});
const handsParts = () => ({
  host: HANDS_HOST_PART,
  sandboxes: handsSettingsPart(),
  repo: repoSettingsPart(),
  hooks: HOOKS_PART,
  egress: EGRESS_PART,
  image: SANDBOX_IMAGE_PART,
  // Go's own variables, for the sandbox tools a hands worker builds when it starts without them.
  tools: SANDBOX_TOOLS_PART,
  docker: DOCKER_PART,
  folders: PATHS_PART,
  secrets: SECRETS_PART,
});

export interface BrainRuntime {
  tuning: BrainWorkerSettings;
  /** A prebuilt workflow bundle (`AGENT_WORKFLOW_BUNDLE`). */
  workflowBundle?: string;
  /** Its Worker Deployment and build id (`AGENT_WORKER_DEPLOYMENT`, `AGENT_WORKER_BUILD_ID`). */
  versioning: WorkerVersioning;
  model: ModelSettings;
  mcp: McpHostSettings;
  secrets: SecretStore;
}

export interface HandsRuntime {
  host: HandsHost;
  sandboxes: HandsSettings;
  repo: RepoSettings;
  /** Repository hooks allowed, and the host hooks this worker defines. */
  hooks: HookHostSettings;
  /** The sandbox image tag. */
  image: string;
  secrets: SecretStore;
  /** The worker's environment, for the programs it runs on the host (git, the egress proxy's registry lookups). */
  hostEnv: Environment;
}

export interface WorkerSettings {
  temporal: TemporalSettings;
  queues: QueueSettings;
  logLevel: LogLevel;
  /** `AGENT_METRICS_ADDRESS`: where Prometheus metrics are served (none when absent). */
  metricsAddress?: string;
  /** The OTLP endpoint spans go to (`OTEL_EXPORTER_OTLP_ENDPOINT`; none: no spans). */
  tracing?: TracingSettings;
  crashPoints: CrashPointSettings;
  /** The forges of `AGENT_FORGES` (brain: the forge activities; hands: cloning and pushing forge repositories). */
  forges: Forges;
  /** For `brain` and `dev`. */
  brain?: BrainRuntime;
  /** For `hands` and `dev`. */
  hands?: HandsRuntime;
}

/**
 * Everything a worker of `role` reads, checked at once: throws a SettingsError naming every wrong
 * variable (`brain worker settings: AGENT_STICKY_FAILOVER: …; ANTHROPIC_API_KEY is not set: …`).
 */
export function workerSettings(role: WorkerRole, env: Environment = process.env): WorkerSettings {
  const base = readingOfParts(common(), env);
  const brain = role === 'hands' ? undefined : readingOfParts(brainParts(), env);
  const hands = role === 'brain' ? undefined : readingOfParts(handsParts(), env);
  const problems = [base, brain, hands].flatMap((reading) => (reading && !reading.ok ? reading.problems : []));
  if (problems.length || !base.ok || (brain && !brain.ok) || (hands && !hands.ok))
    throw new SettingsError(`${role} worker`, [...new Set(problems)]);
  const { temporal, queues, process: proc, tracing, crashPoints, forges } = base.value;
  const settings: WorkerSettings = {
    temporal,
    queues,
    logLevel: proc.logLevel,
    ...(proc.metricsAddress ? { metricsAddress: proc.metricsAddress } : {}),
    ...(tracing ? { tracing } : {}),
    crashPoints,
    forges,
  };
  if (brain) {
    const { tuning, code, versioning, model, mcp, secrets } = brain.value;
    settings.brain = {
      tuning,
      versioning,
      model,
      mcp,
      secrets,
      ...(code.bundle ? { workflowBundle: code.bundle } : {}),
    };
  }
  if (hands) {
    const { host, sandboxes, repo, hooks, image, secrets } = hands.value;
    // One store for the process: the brain's MCP servers and the hands' egress share it.
    const store = settings.brain?.secrets ?? secrets;
    settings.hands = { host, sandboxes, repo, hooks, image: sandboxImageTag(image), secrets: store, hostEnv: env };
  }
  return settings;
}

/** The workers on the configuration page. */
export const BRAIN_WORKER_RUNTIME: RuntimeSettings = {
  title: 'Brain worker',
  intro:
    '`agent worker brain` (and `agent worker dev`, `agent run --with-worker`): the workflows, the model calls and MCP servers. It checks everything below when it starts, before it connects, and names every wrong variable in one error.',
  parts: parts({ ...common(), ...brainParts() }),
};

export const HANDS_WORKER_RUNTIME: RuntimeSettings = {
  title: 'Hands worker',
  intro:
    "`agent worker hands` (and `dev`), one per Docker host: the sandboxes, their tools, the egress proxy and the coding tasks' host-side git. It checks everything below when it starts, naming every wrong variable in one error.",
  parts: parts({ ...common(), ...handsParts() }),
};

function parts(record: Record<string, SettingsPart<unknown>>): SettingsPart<unknown>[] {
  return Object.values(record);
}

// One part each, for the worker factories' defaults (this process's environment).

export function brainTuningFromEnv(): BrainWorkerSettings {
  return readBrainWorkerSettings(process.env);
}

export function workerVersioningFromEnv(): WorkerVersioning {
  return readWorkerVersioning(process.env);
}

export function mcpSettingsFromEnv(): McpHostSettings {
  return readMcpSettings(process.env);
}

export function secretStoreFromEnv(): SecretStore {
  return loadSecretStore(process.env);
}

/** The hands settings of this process's environment (workspace images under the data directory). */
export function handsSettingsFromEnv(): HandsSettings {
  return readHandsSettings(process.env, { imageDir: path.join(DATA_DIR, 'workspaces') });
}

export function hookSettingsFromEnv(): HookHostSettings {
  return readHookHostSettings(process.env);
}

export function repoSettingsFromEnv(): RepoSettings {
  return readPart('coding task', repoSettingsPart(), process.env);
}

export function handsHostFromEnv(): HandsHost {
  return readPart('hands host', HANDS_HOST_PART, process.env);
}

/**
 * This process's environment, for the programs a hands worker runs on the host (git, its credential
 * helper): the live one, as a child process would inherit it when it starts.
 */
export function hostEnvironment(): Environment {
  return process.env;
}

export function workerLogLevel(): LogLevel {
  return readPart('worker', WORKER_PROCESS_PART, process.env).logLevel;
}

export function forgesFromEnv(): Forges {
  return readForges(process.env);
}

export function crashPointsFromEnv(): CrashPointSettings {
  return readPart('crash test', CRASH_POINTS_PART, process.env);
}
