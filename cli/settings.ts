/**
 * The `agent` command's settings module: what it reads from the environment — the Temporal
 * connection, the task queues and the Web UI links — checked when a command that needs them starts,
 * with one error naming every wrong variable. `agent webhook serve` reads the forges and the secret
 * store too. `agent sandbox` and `agent doctor` act as this host's
 * hands worker and read its hands-host settings; `agent worker` and `--with-worker` read the
 * workers' (`workers/settings.ts`). With the workers' and the platform's, the one place that reads
 * `process.env`.
 */
import * as path from 'node:path';
import { handsPart } from '../activities/hands/settings';
import { QUEUES_PART, CONNECTION_PART, type QueueSettings, type TemporalSettings } from '../client/connection-settings';
import { readParts, type Environment, type RuntimeSettings } from '../common/env-settings';
import { DATA_DIR } from '../platform/paths';
import { sandboxImageTag } from '../platform/sandbox-image';
import { COMMAND_LINE_PART, DOCKER_PART, SANDBOX_IMAGE_PART } from '../platform/settings';
import { HANDS_HOST_PART, type HandsHost } from '../workers/hands-host';
import type { WorkspaceQuota } from '../activities/hands/workspace-quota';
import { FORGES_PART, type Forges } from '../activities/forge/settings';
import { SECRETS_PART, type SecretStore } from '../activities/secrets/store';
import { DEPLOYMENT_PART } from '../workers/worker-settings';

export interface CliSettings {
  temporal: TemporalSettings;
  queues: QueueSettings;
}

/** The connection and the queues; throws a SettingsError naming every wrong variable. */
export function cliSettings(env: Environment = process.env): CliSettings {
  return readParts('agent', { temporal: CONNECTION_PART, queues: QUEUES_PART }, env);
}

/** `agent webhook serve`: the connection, the queues, the forges and the secret store (their webhook secrets). */
export function forgeReceiverSettings(
  env: Environment = process.env,
): CliSettings & { forges: Forges; secrets: SecretStore } {
  return readParts(
    'agent webhook serve',
    { temporal: CONNECTION_PART, queues: QUEUES_PART, forges: FORGES_PART, secrets: SECRETS_PART },
    env,
  );
}

/** `agent deploy` and `agent doctor`: the connection and the Worker Deployment (`AGENT_WORKER_DEPLOYMENT`). */
export function deploySettings(env: Environment = process.env): CliSettings & { deployment?: string } {
  const { temporal, queues, deployment } = readParts(
    'agent',
    { temporal: CONNECTION_PART, queues: QUEUES_PART, deployment: DEPLOYMENT_PART },
    env,
  );
  return { temporal, queues, ...deployment };
}

const sandboxesPart = () => handsPart({ imageDir: path.join(DATA_DIR, 'workspaces') });

export interface SandboxHostSettings {
  host: HandsHost;
  /** Where the workspace images are (for `gc`); null: workspaces have no quota. */
  quota: WorkspaceQuota | null;
  /** The sandbox image tag. */
  image: string;
}

/** This host's sandboxes as its hands worker makes them (`agent sandbox`, `agent doctor`). */
export function sandboxHostSettings(env: Environment = process.env): SandboxHostSettings {
  const { host, sandboxes, image } = readParts(
    'agent sandbox',
    { host: HANDS_HOST_PART, sandboxes: sandboxesPart(), image: SANDBOX_IMAGE_PART },
    env,
  );
  return { host, quota: sandboxes.quota, image: sandboxImageTag(image) };
}

/** The `agent` command on the configuration page. */
export const CLI_RUNTIME: RuntimeSettings = {
  title: 'The agent command',
  intro:
    "`bin/agent`: it checks these when a command that needs them starts, naming every wrong variable. `agent sandbox` and `agent doctor` read the hands host's settings (which host, which sandboxes and where their workspace images are) as its hands worker does; `agent deploy` reads the Worker Deployment; `agent worker` and `agent run --with-worker` read the workers' settings.",
  parts: [
    CONNECTION_PART,
    QUEUES_PART,
    DEPLOYMENT_PART,
    COMMAND_LINE_PART,
    FORGES_PART,
    HANDS_HOST_PART,
    sandboxesPart(),
    SANDBOX_IMAGE_PART,
    DOCKER_PART,
  ],
};
