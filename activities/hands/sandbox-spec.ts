/**
 * What a sandbox is: one Docker container per session on two named volumes, with the harness's own
 * programs mounted from the host.
 *
 * - Container `agent-sbx-<sessionId>` from the workspace's environment image (the worker's sandbox
 *   image unless the workspace was given another: `WorkspaceEnvironment`), the workspace volume
 *   `agent-ws-<sessionId>` at /workspace (with a disk quota where the host allows it), the journal
 *   volume `agent-jr-<sessionId>` at /var/lib/agent-journal, and the repository's dependency cache
 *   at /var/cache/agent when it has one (`sandbox-volumes.ts`; names:
 *   `common/sandbox-names.ts`); no network (`NetworkMode: none`), CPU/memory/pids limits,
 *   `no-new-privileges`, an init process that reaps orphans, no Docker socket, labels
 *   `agent.harness=1`, `agent.sandbox=<id>` and `agent.operation=<id>` when known.
 * - The sandbox tools (`executor/sandbox-tools.ts`: the executor, the egress forwarder, the file
 *   tools' helpers), one static binary built on the host, bind-mounted read-only at
 *   `/opt/agent/bin/agent-sandbox-tools`: the harness needs neither python3 nor node in the image.
 * - Two kinds of process run in it. Everything the agent runs — tool commands, the file helpers,
 *   git for the diff — runs as `agent` (uid 1000) with no capabilities at all. The harness's own
 *   bookkeeping (the run wrapper around each command, the journal's readers) runs as root with
 *   only CAP_SETUID/CAP_SETGID (to start the command as `agent`) and CAP_KILL (to stop it), so it
 *   can keep records the agent cannot touch (`journal-store.ts`) and the agent cannot signal it.
 *   Every other capability is dropped.
 */
import type Docker from 'dockerode';
import type { EnvironmentSource } from '../../common/environment';
import {
  containerNameOf,
  DEFAULT_NAME_PREFIX,
  journalVolumeNameOf,
  NAME_PREFIX_PATTERN,
  NAME_PREFIX_RULE,
  SANDBOX_LABELS,
  volumeNameOf,
} from '../../common/sandbox-names';
// egress hook: the container's way out through the host's proxy (activities/egress/).
import type { SandboxEgressWiring } from '../egress/egress-host';
import { SandboxError } from './docker-calls';
import { SANDBOX_TOOLS, sandboxToolsMount } from './executor/sandbox-tools';
import { JOURNAL_DIR, JOURNAL_WRITER } from './journal-store';

export const WORKSPACE_DIR = '/workspace';
export const AGENT_UID = 1000;
/** The agent's user in the sandbox (uid:gid): what its commands, and anything acting for it, run as. */
export const AGENT_USER = `${AGENT_UID}:${AGENT_UID}`;
/**
 * What the harness's own processes in the sandbox may do beyond an unprivileged user: start a
 * command as `agent` and signal it. The agent's processes have none of these (a uid change to
 * 1000 clears them, and `no-new-privileges` keeps them cleared).
 */
const HARNESS_CAPABILITIES = ['SETUID', 'SETGID', 'KILL'];

export interface SandboxLimits {
  /** CPU cores (fractional allowed). */
  cpus: number;
  memoryBytes: number;
  /** Most processes/threads at once. */
  pids: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = { cpus: 2, memoryBytes: 4 * 1024 ** 3, pids: 1024 };

const SANDBOX_ENV = [
  'HOME=/home/agent',
  'USER=agent',
  'LANG=C.UTF-8',
  'TERM=dumb',
  'PAGER=cat',
  'GIT_PAGER=cat',
  'CI=1',
];

/** Where a repository's dependency cache volume is mounted (the package managers' caches point into it). */
export const DEPENDENCY_CACHE_DIR = '/var/cache/agent';
/**
 * The package managers' caches, in the dependency cache volume (only when the workspace has one),
 * so a repository's second night downloads nothing the first fetched. cargo's home (its registry
 * index and crates) and its build output (`target/`, which cargo locks while it builds) are there
 * too. Virtual environments stay in the workspace (poetry's `in-project`): the cache is shared by
 * the repository's workspaces. The cache is another file system than the workspace: uv copies
 * rather than hard-links (pnpm falls back to copying by itself).
 */
const CACHE_ENV = [
  `PIP_CACHE_DIR=${DEPENDENCY_CACHE_DIR}/pip`,
  `npm_config_cache=${DEPENDENCY_CACHE_DIR}/npm`,
  `GOMODCACHE=${DEPENDENCY_CACHE_DIR}/go/mod`,
  `GOCACHE=${DEPENDENCY_CACHE_DIR}/go/build`,
  `GRADLE_USER_HOME=${DEPENDENCY_CACHE_DIR}/gradle`,
  `YARN_CACHE_FOLDER=${DEPENDENCY_CACHE_DIR}/yarn`,
  `YARN_GLOBAL_FOLDER=${DEPENDENCY_CACHE_DIR}/yarn-berry`,
  // pnpm ≤ 10 reads npm's variables, pnpm ≥ 11 its own.
  `npm_config_store_dir=${DEPENDENCY_CACHE_DIR}/pnpm-store`,
  `pnpm_config_store_dir=${DEPENDENCY_CACHE_DIR}/pnpm-store`,
  `npm_config_cache_dir=${DEPENDENCY_CACHE_DIR}/pnpm-cache`,
  `pnpm_config_cache_dir=${DEPENDENCY_CACHE_DIR}/pnpm-cache`,
  `CARGO_HOME=${DEPENDENCY_CACHE_DIR}/cargo`,
  `CARGO_TARGET_DIR=${DEPENDENCY_CACHE_DIR}/cargo-target`,
  `UV_CACHE_DIR=${DEPENDENCY_CACHE_DIR}/uv`,
  'UV_LINK_MODE=copy',
  `POETRY_CACHE_DIR=${DEPENDENCY_CACHE_DIR}/poetry`,
  'POETRY_VIRTUALENVS_IN_PROJECT=true',
  `PDM_CACHE_DIR=${DEPENDENCY_CACHE_DIR}/pdm`,
  `HATCH_CACHE_DIR=${DEPENDENCY_CACHE_DIR}/hatch`,
];

/**
 * The image a workspace's containers run and its dependency cache volume, as its workspace volume
 * records them (`SandboxLifecycle.assignEnvironment`); without a record, the worker's default image.
 */
export interface WorkspaceEnvironment {
  image: string;
  cache?: string;
  /** Where the environment came from and its content hash (for reports). */
  source?: EnvironmentSource;
  hash?: string;
}

/** The environment a workspace volume's labels record (the default image when they record none). */
export function environmentOf(labels: Record<string, string> | undefined, defaultImage: string): WorkspaceEnvironment {
  const cache = labels?.[SANDBOX_LABELS.cache];
  const source = labels?.[SANDBOX_LABELS.environmentSource] as EnvironmentSource | undefined;
  const hash = labels?.[SANDBOX_LABELS.environmentHash];
  return {
    image: labels?.[SANDBOX_LABELS.environment] ?? defaultImage,
    ...(cache ? { cache } : {}),
    ...(source ? { source } : {}),
    ...(hash ? { hash } : {}),
  };
}

/** The labels a workspace volume records its environment with. */
export function environmentLabels(environment: WorkspaceEnvironment, defaultImage: string): Record<string, string> {
  return {
    ...(environment.image !== defaultImage ? { [SANDBOX_LABELS.environment]: environment.image } : {}),
    ...(environment.cache ? { [SANDBOX_LABELS.cache]: environment.cache } : {}),
    ...(environment.source ? { [SANDBOX_LABELS.environmentSource]: environment.source } : {}),
    ...(environment.hash ? { [SANDBOX_LABELS.environmentHash]: environment.hash } : {}),
  };
}

/** The name prefix given, or the default; throws when it is not one `common/sandbox-names.ts` allows. */
export function namePrefixOf(namePrefix: string | undefined): string {
  const prefix = namePrefix ?? DEFAULT_NAME_PREFIX;
  if (!NAME_PREFIX_PATTERN.test(prefix))
    throw new SandboxError('invalid', `sandbox name prefix "${prefix}" must be ${NAME_PREFIX_RULE}`);
  return prefix;
}

/** The environment of the container and every command in it (egress hook: proxy, CA and registry settings). */
export function sandboxEnv(egress: SandboxEgressWiring | undefined): string[] {
  return egress ? [...SANDBOX_ENV, ...egress.env()] : SANDBOX_ENV;
}

/** The labels of a sandbox's container and volumes: `extra` (a scope such as a test run's) and the harness's own. */
export function sandboxLabels(
  extra: Record<string, string>,
  sessionId: string,
  operationId: string | undefined,
): Record<string, string> {
  return {
    ...extra,
    [SANDBOX_LABELS.harness]: '1',
    [SANDBOX_LABELS.sandbox]: sessionId,
    ...(operationId ? { [SANDBOX_LABELS.operation]: operationId } : {}),
  };
}

/** How Docker creates a session's container (see the module's description). */
export function containerSpec(sandbox: {
  sessionId: string;
  environment: WorkspaceEnvironment;
  namePrefix: string;
  limits: SandboxLimits;
  labels: Record<string, string>;
  egress: SandboxEgressWiring | undefined;
  /** The sandbox tools binary on the host (`platform/sandbox-tools.ts`). */
  sandboxTools: string;
}): Docker.ContainerCreateOptions {
  const { sessionId, namePrefix, limits, egress, environment } = sandbox;
  const name = containerNameOf(sessionId, namePrefix);
  return {
    name,
    Image: environment.image,
    // egress hook: with egress wiring the first process also runs the forwarder to the proxy.
    Cmd: egress?.command ?? ['sleep', 'infinity'],
    // The container's own processes (init, the idle sleep) belong to the harness: the agent cannot
    // signal them. Every agent process is started as AGENT_USER.
    User: JOURNAL_WRITER,
    WorkingDir: WORKSPACE_DIR,
    Env: [...sandboxEnv(egress), ...(environment.cache ? CACHE_ENV : [])],
    Labels: sandbox.labels,
    HostConfig: {
      NetworkMode: 'none',
      Init: true,
      Mounts: [
        { Type: 'volume', Source: volumeNameOf(sessionId, namePrefix), Target: WORKSPACE_DIR },
        { Type: 'volume', Source: journalVolumeNameOf(sessionId, namePrefix), Target: JOURNAL_DIR },
        ...(environment.cache
          ? [{ Type: 'volume' as const, Source: environment.cache, Target: DEPENDENCY_CACHE_DIR }]
          : []),
        ...(egress?.mounts(name) ?? []),
        sandboxToolsMount(sandbox.sandboxTools),
      ],
      NanoCpus: Math.round(limits.cpus * 1e9),
      Memory: limits.memoryBytes,
      MemorySwap: limits.memoryBytes,
      PidsLimit: limits.pids,
      CapDrop: ['ALL'],
      CapAdd: HARNESS_CAPABILITIES,
      SecurityOpt: ['no-new-privileges'],
      RestartPolicy: { Name: 'no' },
    },
  };
}

/**
 * Why a session's existing container is not one `containerSpec` would make now, from its mounts, or
 * undefined when it is: it was made by a harness version before the egress proxy socket or the
 * journal volume, or with another build of the sandbox tools (or none) than `sandboxTools`, which
 * the executor and the file tools would then run.
 */
export function outdatedContainer(
  mounts: ReadonlyArray<{ Source: string; Destination: string }>,
  now: { egress: SandboxEgressWiring | undefined; sandboxTools: string },
): string | undefined {
  const mounted = (target: string) => mounts.some((mount) => mount.Destination === target);
  if (now.egress !== undefined && !mounted(now.egress.marker))
    return 'made by an older version of the harness (without the egress proxy socket)';
  if (!mounted(JOURNAL_DIR)) return 'made by an older version of the harness (without the tool-call journal volume)';
  const tools = mounts.find((mount) => mount.Destination === SANDBOX_TOOLS)?.Source;
  if (tools !== now.sandboxTools)
    return `made by another version of the harness (${tools ? 'with another build of' : 'without'} the sandbox tools)`;
  return undefined;
}
