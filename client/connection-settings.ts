/**
 * The Temporal connection and the task queues, as every runtime reads them from its environment:
 * the connection the same way as the `temporal` CLI (`TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`,
 * `TEMPORAL_API_KEY`, `TEMPORAL_TLS*`, `TEMPORAL_PROFILE` and the TOML profiles, through
 * `@temporalio/envconfig`), so the same workers and CLI run against the local dev server, a cluster
 * or Temporal Cloud. Declared as settings (`common/env-settings.ts`); pure: the environment is given.
 */
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { httpUrl, readPart, settingsPart, text, variable, type Environment } from '../common/env-settings';
import { DEFAULT_BRAIN_QUEUE, DEFAULT_HANDS_QUEUE } from '../common/task-queues';
import { TEMPORAL_UI_PORT } from '../platform/settings';

export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';

export interface TemporalSettings {
  connectionOptions: ReturnType<typeof loadClientConnectConfig>['connectionOptions'];
  address: string;
  namespace: string;
  /** The Web UI's address, for the links the commands print (no trailing `/`). */
  webUi: string;
}

/** The variables of envconfig's with a text value, as it takes them. */
function definedOnly(env: Environment): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) out[name] = value;
  return out;
}

export const CONNECTION_PART = settingsPart({
  title: 'Temporal connection',
  intro:
    'Every process that talks to Temporal reads the connection as the `temporal` CLI does (`@temporalio/envconfig`: these variables over the profile of the TOML config file), so the same workers and CLI run against the local dev server, a cluster or Temporal Cloud.',
  variables: {
    address: variable(
      'TEMPORAL_ADDRESS',
      {
        description: "the Temporal server's gRPC address",
        default: `\`${DEFAULT_TEMPORAL_ADDRESS}\``,
        values: '`host:port`',
      },
      text(undefined),
    ),
    namespace: variable('TEMPORAL_NAMESPACE', { description: 'the namespace', default: '`default`' }, text(undefined)),
    apiKey: variable(
      'TEMPORAL_API_KEY',
      { description: 'an API key (Temporal Cloud); turns TLS on', default: 'none' },
      text(undefined),
    ),
    profile: variable(
      'TEMPORAL_PROFILE',
      { description: 'the profile of the TOML config file to start from', default: '`default`' },
      text(undefined),
    ),
    uiPort: TEMPORAL_UI_PORT,
    webUi: variable(
      'AGENT_WEB_UI',
      {
        description: 'the Web UI address of the links the commands print',
        default: "the local dev server's, `http://127.0.0.1:<TEMPORAL_UI_PORT>`",
        values: 'an http(s) URL',
      },
      httpUrl(() => undefined),
    ),
  },
  documented: [
    {
      name: 'TEMPORAL_TLS',
      description:
        'TLS on (`true`) or off; `TEMPORAL_TLS_CLIENT_CERT_PATH` / `_DATA`, `TEMPORAL_TLS_CLIENT_KEY_PATH` / `_DATA`, `TEMPORAL_TLS_SERVER_CA_CERT_PATH` / `_DATA`, `TEMPORAL_TLS_SERVER_NAME`, `TEMPORAL_TLS_DISABLE_HOST_VERIFICATION` as for the `temporal` CLI',
      default: 'off (on with an API key)',
    },
    {
      name: 'TEMPORAL_CONFIG_FILE',
      description: 'the TOML config file of the profiles',
      default: '`~/.config/temporalio/temporal.toml`',
    },
    {
      name: 'TEMPORAL_GRPC_META_<NAME>',
      description: 'a gRPC header sent with every request',
      default: 'none',
    },
  ],
  build: (values, env): TemporalSettings => {
    let config: ReturnType<typeof loadClientConnectConfig>;
    try {
      config = loadClientConnectConfig({ profile: values.profile, overrideEnvVars: definedOnly(env) });
    } catch (err) {
      throw new Error(
        `the Temporal client configuration (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE): ${(err as Error).message}`,
      );
    }
    const address = config.connectionOptions.address ?? DEFAULT_TEMPORAL_ADDRESS;
    return {
      connectionOptions: { ...config.connectionOptions, address },
      address,
      namespace: config.namespace ?? 'default',
      webUi: values.webUi ?? `http://127.0.0.1:${values.uiPort}`,
    };
  },
});

export interface QueueSettings {
  brain: string;
  hands: string;
}

export const QUEUES_PART = settingsPart({
  title: 'Task queues',
  intro:
    'Brain work (workflows, model calls) and hands work (sandbox tools) run on separate queues; each hands host also polls its own, `<AGENT_HANDS_QUEUE>@<AGENT_HANDS_HOST>`. Workers and the commands that start work must agree on them.',
  variables: {
    brain: variable(
      'AGENT_BRAIN_QUEUE',
      { description: 'the brain queue: workflows and model calls', default: `\`${DEFAULT_BRAIN_QUEUE}\`` },
      text(DEFAULT_BRAIN_QUEUE),
    ),
    hands: variable(
      'AGENT_HANDS_QUEUE',
      { description: 'the shared hands queue: sandbox tools and host-side git', default: `\`${DEFAULT_HANDS_QUEUE}\`` },
      text(DEFAULT_HANDS_QUEUE),
    ),
  },
});

/** The Temporal connection of `env`; throws an Error naming every wrong variable. */
export function temporalSettings(env: Environment): TemporalSettings {
  return readPart('Temporal connection', CONNECTION_PART, env);
}

/** `AGENT_BRAIN_QUEUE` / `AGENT_HANDS_QUEUE` of `env`. */
export function queueSettings(env: Environment): QueueSettings {
  return readPart('task queue', QUEUES_PART, env);
}
