/**
 * Sandboxes: one Docker container per session on two named volumes, and the one way to run
 * anything in them. All Docker access of the hands goes through this class.
 *
 * - Container `agent-sbx-<sessionId>` from the sandbox image, the workspace volume
 *   `agent-ws-<sessionId>` at /workspace (with a disk quota where the host allows it) and the journal
 *   volume `agent-jr-<sessionId>` at /var/lib/agent-journal (`sandbox-volumes.ts`; names:
 *   `common/sandbox-names.ts`); no network (`NetworkMode: none`), CPU/memory/pids limits,
 *   `no-new-privileges`, an init process that reaps orphans, no Docker socket, labels
 *   `agent.harness=1`, `agent.sandbox=<id>` and `agent.operation=<id>` when known.
 * - Two kinds of process run in it. Everything the agent runs — tool commands, the file helpers,
 *   git for the diff — runs as `agent` (uid 1000) with no capabilities at all. The harness's own
 *   bookkeeping (the run wrapper around each command, the journal's readers) runs as root with
 *   only CAP_SETUID/CAP_SETGID (to start the command as `agent`) and CAP_KILL (to stop it), so it
 *   can keep records the agent cannot touch (`journal-store.ts`) and the agent cannot signal it.
 *   Every other capability is dropped.
 * - Created lazily by `ensure`. A container that died (exited, was killed or removed) is replaced on
 *   the same volumes and `ensure` says why, so the tool result can tell the model; so is a container
 *   made by an older harness version (without the journal volume). Concurrent `ensure` calls for one
 *   id share one creation; a creation that loses a race with another process adopts the winner's
 *   container.
 * - `exec` runs a command under the run wrapper (scripts.ts): as `agent`, in /workspace, with a
 *   timeout enforced inside the container, an output cap, and a process identity (pid = pgid) that
 *   `kill` can target later, even from another process.
 * - Commands reach the container through its executor (`executor/`), one long-running process per
 *   sandbox that runs them on request without a `docker exec` round trip each; through `docker exec`
 *   when it cannot start (the result says so) or when the manager is made with `executor: false`.
 */
import type Docker from 'dockerode';
import type { EnvironmentSource } from '../../common/environment';
import * as tar from 'tar-stream';
import {
  containerNameOf,
  DEFAULT_NAME_PREFIX,
  isSessionId,
  NAME_PREFIX_PATTERN,
  NAME_PREFIX_RULE,
  journalVolumeNameOf,
  SANDBOX_LABELS,
  SESSION_ID_RULE,
  volumeNameOf,
} from '../../common/sandbox-names';
import { classifyDockerError, dockerCall, SandboxError, statusOf } from './docker-calls';
import { JOURNAL_DIR, JOURNAL_WRITER, type ToolCallRecords } from './journal-store';
import { SCRIPTS, type RunExit } from './scripts';
import { SandboxVolumes } from './sandbox-volumes';
import { quotaUnsupportedReason, type WorkspaceQuota } from './workspace-quota';
// egress hook: the container's way out through the host's proxy (activities/egress/).
import type { SandboxEgressWiring } from '../egress/egress-host';
import { commandRunner, type CommandRun, type CommandRunner } from './executor/runner';

export { SandboxError, classifyDockerError, type SandboxErrorKind } from './docker-calls';

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

export interface SandboxManagerOptions {
  docker: Docker;
  /** The sandbox image tag (`sandboxImageTag()`). */
  image: string;
  limits?: Partial<SandboxLimits>;
  /** Only `none` is supported: sandboxes have no network. */
  network?: 'none';
  /** What container and volume names start with (default `agent-`; see `common/sandbox-names.ts`). */
  namePrefix?: string;
  /**
   * A disk quota for new workspace volumes (`workspace-quota.ts`); none when absent or null. Where the
   * host cannot make one (not root, remote engine, missing tools) the manager says why through `warn`
   * once and makes plain volumes.
   */
  quota?: WorkspaceQuota | null;
  /**
   * Extra labels on every container and volume it makes; `list` and `gc` then see only sandboxes
   * that carry them (a manager scoped to, say, one test run), and `agent.keep` marks a sandbox kept
   * on purpose.
   */
  labels?: Record<string, string>;
  /** Where warnings go (default: stderr). */
  warn?: (line: string) => void;
  /**
   * egress hook: the wiring to the hands worker's egress proxy (`activities/egress/egress-host.ts`):
   * the proxy socket and CA mounts, the forwarder as the container's first process, and the proxy
   * and registry environment of every command. Without it the sandbox has no way out at all.
   */
  egress?: SandboxEgressWiring;
  /** Run commands through a persistent executor per sandbox (default), or `false`: a `docker exec` each. */
  executor?: boolean;
}

export interface EnsureResult {
  sessionId: string;
  containerName: string;
  containerId: string;
  /** True when this call created the container. */
  created: boolean;
  /** Set when a dead container was replaced: why, in words (`the previous container was gone (exited 137)`). */
  replaced?: string;
}

export interface ProcessIdentity {
  pid: number;
  /** Equal to pid: the command runs as a session (and group) leader. */
  pgid: number;
  /** Attempt number under the run base. */
  attempt: number;
  runDir: string;
}

export interface ExecJournal {
  /** Journal file in the workspace. */
  path: string;
  /** JSON text of a new journal up to and including `"events":[`. */
  head: string;
  /** The `started` event as a JSON object; the wrapper adds attempt, runDir, wrapperPid, container, at. */
  started: string;
  /** `fresh`: run only as the call's first attempt (else report the journal); `append`: run as the next attempt. */
  mode: 'fresh' | 'append';
  /**
   * `fresh` only: where an older harness version kept this call's attempts; any attempt there counts as
   * an earlier attempt too (the caller then consults `runStatus`, which reads it).
   */
  legacyRunBase?: string;
}

export interface ExecOptions {
  /** A bash script, run as `bash -c <command> agent-tool <args...>`. */
  command: string;
  args?: string[];
  /** Directory under which this command's attempt directories are made. */
  runBase: string;
  timeoutMs: number;
  /** Output capture cap (bytes); the rest is counted and discarded. */
  maxOutputBytes?: number;
  /** A path the full output is hard-linked to when the command ends. */
  outputLink?: string;
  journal?: ExecJournal;
  /** Aborting kills the command's process group (and marks the run `cancelled`). */
  signal?: AbortSignal;
  onProcess?: (identity: ProcessIdentity) => void;
}

export type ExecResult =
  | {
      kind: 'finished';
      exit: RunExit;
      output: Buffer;
      process: ProcessIdentity;
      outputPath: string;
      /** Set when it ran with `docker exec` because the sandbox's executor could not start: why. */
      executorFallback?: string;
    }
  /**
   * The sandbox's executor stopped before the command's end reached the hands; the container runs
   * on, so the command may too: its records (`runStatus`) tell.
   */
  | { kind: 'executor-lost'; reason: string; process?: ProcessIdentity }
  /** `fresh` mode found an earlier attempt: nothing ran; consult `runStatus`. */
  | { kind: 'journal-exists'; journal: string }
  /** The container stopped while the command ran. */
  | { kind: 'lost'; reason: string; process?: ProcessIdentity };

export type RunState = 'none' | 'unstarted' | 'starting' | 'running' | 'finished' | 'dead';

export interface RunStatus {
  attempt: number;
  state: RunState;
  exit?: RunExit;
  process?: { pid: number; pgid: number; startTime: number };
  /** The journal text, when one exists. */
  journal?: string;
  /** Output of the latest attempt so far (complete when finished). */
  output: Buffer;
}

export interface SandboxInfo {
  sessionId: string;
  operationId?: string;
  container?: { name: string; id: string; state: string; status: string; createdAt: Date };
  /** The workspace volume; `quotaImage` when it has a disk quota. */
  volume?: { name: string; createdAt?: Date; quotaImage?: string };
  journalVolume?: { name: string };
  /** Why it is kept on purpose (`agent.keep`), if it is. */
  keep?: string;
}

export interface GcResult {
  removedContainers: string[];
  removedVolumes: string[];
  /** Workspace images no volume used any more, detached and deleted (with `volumes`). */
  releasedImages?: string[];
}

const LABEL_HARNESS = SANDBOX_LABELS.harness;
const LABEL_SANDBOX = SANDBOX_LABELS.sandbox;
const LABEL_OPERATION = SANDBOX_LABELS.operation;
export const DEFAULT_CAPTURE_BYTES = 8 * 1024 * 1024;
/** Where a repository's dependency cache volume is mounted (the package managers' caches point into it). */
export const DEPENDENCY_CACHE_DIR = '/var/cache/agent';
const SANDBOX_ENV = [
  'HOME=/home/agent',
  'USER=agent',
  'LANG=C.UTF-8',
  'TERM=dumb',
  'PAGER=cat',
  'GIT_PAGER=cat',
  'CI=1',
];
/** The package managers' caches, in the dependency cache volume (only when the workspace has one). */
const CACHE_ENV = [
  `PIP_CACHE_DIR=${DEPENDENCY_CACHE_DIR}/pip`,
  `npm_config_cache=${DEPENDENCY_CACHE_DIR}/npm`,
  `GOMODCACHE=${DEPENDENCY_CACHE_DIR}/go/mod`,
  `GOCACHE=${DEPENDENCY_CACHE_DIR}/go/build`,
  `GRADLE_USER_HOME=${DEPENDENCY_CACHE_DIR}/gradle`,
  `YARN_CACHE_FOLDER=${DEPENDENCY_CACHE_DIR}/yarn`,
];

/** The image a workspace's containers run and its dependency cache volume (`assignEnvironment`). */
export interface WorkspaceEnvironment {
  image: string;
  cache?: string;
  /** Where the environment came from and its content hash (for reports). */
  source?: EnvironmentSource;
  hash?: string;
}

function environmentOf(labels: Record<string, string> | undefined, defaultImage: string): WorkspaceEnvironment {
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

export class SandboxManager {
  private readonly docker: Docker;
  private readonly image: string;
  readonly limits: SandboxLimits;
  /** The disk quota of new workspaces, or null when they get none. */
  readonly quota: WorkspaceQuota | null;
  private readonly extraLabels: Record<string, string>;
  private readonly volumes: SandboxVolumes;
  private readonly pending = new Map<string, Promise<EnsureResult>>();
  private readonly runner: CommandRunner;
  readonly namePrefix: string;
  private readonly egress: SandboxEgressWiring | undefined;

  constructor(options: SandboxManagerOptions) {
    if (options.network !== undefined && options.network !== 'none')
      throw new SandboxError('invalid', `network ${String(options.network)} is not supported`);
    this.docker = options.docker;
    this.image = options.image;
    this.limits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits };
    this.namePrefix = options.namePrefix ?? DEFAULT_NAME_PREFIX;
    this.egress = options.egress;
    if (!NAME_PREFIX_PATTERN.test(this.namePrefix))
      throw new SandboxError('invalid', `sandbox name prefix "${this.namePrefix}" must be ${NAME_PREFIX_RULE}`);
    this.extraLabels = options.labels ?? {};
    const unsupported = options.quota ? quotaUnsupportedReason() : undefined;
    if (options.quota && unsupported) {
      (options.warn ?? ((line: string) => console.warn(line)))(
        `WARNING: workspaces get NO disk quota: ${unsupported}. A tool can fill the host's disk. ` +
          'Run the hands worker as root on the Docker host for quotas, or set AGENT_WORKSPACE_QUOTA=off to accept this.',
      );
    }
    this.quota = options.quota && !unsupported ? options.quota : null;
    this.volumes = new SandboxVolumes(this.docker, this.quota, AGENT_UID, this.namePrefix);
    this.runner = commandRunner({
      executor: options.executor !== false,
      demux: (stream, stdout, stderr) => this.docker.modem.demuxStream(stream, stdout, stderr),
      createExec: (sessionId, cmd, user, attachStdin) =>
        this.createExec(this.docker.getContainer(containerNameOf(sessionId, this.namePrefix)), cmd, user, attachStdin),
    });
  }

  /** The pid of the session's executor in its container, when one is live (diagnostics, tests). */
  executorPid(sessionId: string): Promise<number | undefined> {
    return this.runner.executorPid(sessionId);
  }

  /** Closes the executors this manager started (they exit once their commands end). */
  close(): void {
    this.runner.close();
  }

  /** The disk quota of the session's workspace, or undefined when it has none (a plain volume). */
  workspaceQuotaBytes(sessionId: string): Promise<number | undefined> {
    return this.volumes.quotaBytesOf(sessionId);
  }

  /** Makes sure a running container exists for the sandbox; creates or replaces one as needed. */
  ensure(sessionId: string, options: { operationId?: string } = {}): Promise<EnsureResult> {
    checkSessionId(sessionId);
    const inFlight = this.pending.get(sessionId);
    if (inFlight) return inFlight;
    const creation = this.doEnsure(sessionId, options.operationId)
      .then((result) => {
        // A new container: whatever executor the session had belonged to the old one.
        if (result.created) this.runner.forget(sessionId);
        return result;
      })
      .finally(() => this.pending.delete(sessionId));
    this.pending.set(sessionId, creation);
    return creation;
  }

  private async doEnsure(sessionId: string, operationId: string | undefined, round = 0): Promise<EnsureResult> {
    const name = containerNameOf(sessionId, this.namePrefix);
    const container = this.docker.getContainer(name);
    const info = await dockerCall('inspect the sandbox container', () => container.inspect(), [404]);
    let replaced: string | undefined;
    if (info) {
      const state = info.State;
      const result = { sessionId, containerName: name, containerId: info.Id, created: false };
      const mounted = (target: string) => (info.Mounts ?? []).some((mount) => mount.Destination === target);
      const withoutEgress = this.egress !== undefined && !mounted(this.egress.marker);
      const current = mounted(JOURNAL_DIR) && !withoutEgress;
      if (current && state.Running && state.Paused)
        await dockerCall('unpause the sandbox container', () => container.unpause());
      if (current && state.Running) return result;
      if (current && state.Status === 'created') {
        await this.start(container);
        return result;
      }
      replaced = !current
        ? `the previous container was made by an older version of the harness (without the ${withoutEgress ? 'egress proxy socket' : 'tool-call journal volume'})`
        : `the previous container was gone (${state.OOMKilled ? `out of memory, exit ${state.ExitCode}` : state.Status === 'dead' ? 'dead' : `exited ${state.ExitCode}`})`;
      await dockerCall('remove the dead sandbox container', () => container.remove({ force: true }), [404, 409]);
    } else if (await this.volumes.workspaceExists(sessionId)) {
      replaced = 'the previous container was gone (removed)';
    }

    await this.volumes.ensure(sessionId, this.labels(sessionId, operationId));
    await this.egress?.ready();
    const environment = environmentOf(await this.volumes.workspaceLabels(sessionId), this.image);
    let created: Docker.Container;
    try {
      created = await this.docker.createContainer(this.containerSpec(sessionId, operationId, environment));
    } catch (err) {
      if (statusOf(err) === 409 && round < 50) {
        // Another process is creating it (Docker reserves the name before the container can be
        // inspected): wait, then adopt theirs.
        await new Promise((resolve) => setTimeout(resolve, 100));
        const theirs = await this.doEnsure(sessionId, operationId, round + 1);
        return { ...theirs, ...(replaced ? { replaced } : {}) };
      }
      if (statusOf(err) === 404)
        throw new SandboxError(
          'image-missing',
          environment.image === this.image
            ? `the sandbox image ${this.image} does not exist: build it with \`npm run sandbox:build\``
            : `the workspace's environment image ${environment.image} does not exist any more (removed by hand?): ` +
              `remove the workspace (\`agent sandbox rm ${sessionId}\`) so the next run prepares its environment again`,
          { cause: err },
        );
      throw classifyDockerError('create the sandbox container', err);
    }
    await this.start(created);
    return {
      sessionId,
      containerName: name,
      containerId: created.id,
      created: true,
      ...(replaced ? { replaced } : {}),
    };
  }

  private async start(container: Docker.Container): Promise<void> {
    await dockerCall('start the sandbox container', () => container.start(), [304]);
  }

  /**
   * Gives a workspace its environment before any container of it exists: the workspace volume is
   * made with the environment's image and cache volume as labels, which every later container of
   * the session follows. A workspace that already exists keeps what it has (returned).
   */
  async assignEnvironment(
    sessionId: string,
    environment: WorkspaceEnvironment,
    options: { operationId?: string; cacheOf?: string } = {},
  ): Promise<WorkspaceEnvironment & { existed: boolean }> {
    checkSessionId(sessionId);
    const existing = await this.workspaceEnvironment(sessionId);
    if (existing) return { ...existing, existed: true };
    if (environment.cache)
      await this.volumes.ensureCache(environment.cache, {
        ...this.extraLabels,
        [SANDBOX_LABELS.cache]: options.cacheOf || environment.cache,
      });
    await this.volumes.ensure(sessionId, {
      ...this.labels(sessionId, options.operationId),
      ...(environment.image !== this.image ? { [SANDBOX_LABELS.environment]: environment.image } : {}),
      ...(environment.cache ? { [SANDBOX_LABELS.cache]: environment.cache } : {}),
      ...(environment.source ? { [SANDBOX_LABELS.environmentSource]: environment.source } : {}),
      ...(environment.hash ? { [SANDBOX_LABELS.environmentHash]: environment.hash } : {}),
    });
    return { ...environment, existed: false };
  }

  /** The environment a workspace was given, or undefined when the workspace does not exist yet. */
  async workspaceEnvironment(sessionId: string): Promise<WorkspaceEnvironment | undefined> {
    const labels = await this.volumes.workspaceLabels(sessionId);
    return labels ? environmentOf(labels, this.image) : undefined;
  }

  /** The hands worker's default sandbox image (what a workspace without an environment of its own runs). */
  get defaultImage(): string {
    return this.image;
  }

  private containerSpec(
    sessionId: string,
    operationId: string | undefined,
    environment: WorkspaceEnvironment,
  ): Docker.ContainerCreateOptions {
    const name = containerNameOf(sessionId, this.namePrefix);
    return {
      name,
      Image: environment.image,
      // egress hook: with egress wiring the first process also runs the forwarder to the proxy.
      Cmd: this.egress?.command ?? ['sleep', 'infinity'],
      // The container's own processes (init, the idle sleep) belong to the harness: the agent cannot
      // signal them. Every agent process is started as AGENT_USER.
      User: JOURNAL_WRITER,
      WorkingDir: WORKSPACE_DIR,
      Env: [...this.sandboxEnv(), ...(environment.cache ? CACHE_ENV : [])],
      Labels: this.labels(sessionId, operationId),
      HostConfig: {
        NetworkMode: 'none',
        Init: true,
        Mounts: [
          { Type: 'volume', Source: volumeNameOf(sessionId, this.namePrefix), Target: WORKSPACE_DIR },
          { Type: 'volume', Source: journalVolumeNameOf(sessionId, this.namePrefix), Target: JOURNAL_DIR },
          ...(environment.cache ? [{ Type: 'volume' as const, Source: environment.cache, Target: DEPENDENCY_CACHE_DIR }] : []),
          ...(this.egress?.mounts(name) ?? []),
        ],
        NanoCpus: Math.round(this.limits.cpus * 1e9),
        Memory: this.limits.memoryBytes,
        MemorySwap: this.limits.memoryBytes,
        PidsLimit: this.limits.pids,
        CapDrop: ['ALL'],
        CapAdd: HARNESS_CAPABILITIES,
        SecurityOpt: ['no-new-privileges'],
        RestartPolicy: { Name: 'no' },
      },
    };
  }

  /** The environment of the container and every command in it (egress hook: proxy, CA and registry settings). */
  private sandboxEnv(): string[] {
    return this.egress ? [...SANDBOX_ENV, ...this.egress.env()] : SANDBOX_ENV;
  }

  private labels(sessionId: string, operationId: string | undefined): Record<string, string> {
    return {
      ...this.extraLabels,
      [LABEL_HARNESS]: '1',
      [LABEL_SANDBOX]: sessionId,
      ...(operationId ? { [LABEL_OPERATION]: operationId } : {}),
    };
  }

  /** Runs a command under the run wrapper; see `ExecOptions` and scripts.ts. */
  async exec(sessionId: string, options: ExecOptions): Promise<ExecResult> {
    const container = this.docker.getContainer(containerNameOf(sessionId, this.namePrefix));
    const journal = options.journal;
    const argv = [
      'bash',
      '-c',
      SCRIPTS.runWrapper,
      'agent-run',
      options.runBase,
      options.outputLink ?? '',
      (Math.max(1, options.timeoutMs) / 1000).toFixed(3),
      String(options.maxOutputBytes ?? DEFAULT_CAPTURE_BYTES),
      options.command,
      journal?.path ?? '',
      journal?.head ?? '',
      journal?.started ?? '',
      journal?.mode === 'fresh' && journal.legacyRunBase
        ? `fresh:${journal.legacyRunBase}`
        : (journal?.mode ?? 'append'),
      ...(options.args ?? []),
    ];
    let identity: ProcessIdentity | undefined;
    let killing: Promise<void> | undefined;
    const killNow = () => {
      if (!identity || killing) return;
      killing = this.kill(sessionId, identity.pgid, { runDir: identity.runDir }).catch(() => undefined);
    };
    const onAbort = () => killNow();
    options.signal?.addEventListener('abort', onAbort);

    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let head = '';
    const onStdout = (chunk: Buffer) => {
      stdout.push(chunk);
      if (identity || head.length > 200) return;
      head += chunk.toString('latin1');
      const match = /^@@agent-pid (\d+) (\d+)\n/.exec(head);
      if (match) {
        const pid = Number(match[1]);
        const attempt = Number(match[2]);
        identity = { pid, pgid: pid, attempt, runDir: `${options.runBase}/${attempt}` };
        options.onProcess?.(identity);
        if (options.signal?.aborted) killNow();
      }
    };

    // The wrapper enforces the timeout; this guard only catches a wedged engine or executor.
    const guardMs = options.timeoutMs + 60_000;
    let guard: NodeJS.Timeout | undefined;
    let run: CommandRun;
    try {
      run = await Promise.race([
        this.runner.run(
          sessionId,
          argv,
          JOURNAL_WRITER,
          { stdout: onStdout, stderr: (chunk) => stderr.push(chunk) },
          { exitCode: false },
        ),
        new Promise<never>((_, reject) => {
          guard = setTimeout(
            () =>
              reject(new SandboxError('unavailable', `the sandbox command did not end ${guardMs} ms after it started`)),
            guardMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(guard);
      options.signal?.removeEventListener('abort', onAbort);
    }
    await killing;
    const fallback = run.executorFallback ? { executorFallback: run.executorFallback } : {};

    const all = Buffer.concat(stdout);
    if (all.subarray(0, 16).toString('latin1') === '@@agent-journal\n') {
      return { kind: 'journal-exists', journal: all.subarray(16).toString('utf8') };
    }
    const parsed = parseRunOutput(all);
    // With the executor lost mid-output, what arrived may be cut short: the records have it whole.
    if (parsed && !(run.executorLost && parsed.output.length < parsed.exit.outputBytes)) {
      const runDir = `${options.runBase}/${parsed.attempt}`;
      const process: ProcessIdentity = identity ?? {
        pid: parsed.exit.pid,
        pgid: parsed.exit.pid,
        attempt: parsed.attempt,
        runDir,
      };
      return {
        kind: 'finished',
        exit: parsed.exit,
        output: parsed.output,
        process,
        outputPath: parsed.exit.outputPath ?? options.outputLink ?? `${runDir}/out`,
        ...fallback,
      };
    }
    // No result: the container probably died under the command. Docker updates its state a moment
    // after the exec stream ends, so look for a little while; an executor that died alone leaves the
    // container running.
    for (let i = 0; i < (run.executorLost ? 10 : 50); i++) {
      const state = await dockerCall('inspect the sandbox container', () => container.inspect(), [404]);
      if (!state || !state.State.Running) {
        const why = !state ? 'removed' : state.State.OOMKilled ? 'out of memory' : `exited ${state.State.ExitCode}`;
        return {
          kind: 'lost',
          reason: `the sandbox container stopped while the command ran (${why})`,
          ...(identity ? { process: identity } : {}),
        };
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (run.executorLost)
      return { kind: 'executor-lost', reason: run.executorLost, ...(identity ? { process: identity } : {}) };
    throw new SandboxError(
      'failed',
      `the run wrapper ended without a result: ${Buffer.concat(stderr).toString('utf8').trim().slice(0, 500) || 'no output'}`,
    );
  }

  /**
   * The latest attempt of a tool call (state, exit, output so far) and its journal, from its records
   * — or, when they hold no attempt, from where an older harness version kept them (`legacy`).
   */
  async runStatus(sessionId: string, records: ToolCallRecords, legacy?: ToolCallRecords): Promise<RunStatus> {
    const status = await this.readRunStatus(sessionId, records, JOURNAL_WRITER);
    // The workspace is the agent's: what an older version left there is read as the agent, never as root.
    return status.state === 'none' && legacy ? this.readRunStatus(sessionId, legacy, AGENT_USER) : status;
  }

  private async readRunStatus(sessionId: string, records: ToolCallRecords, user: string): Promise<RunStatus> {
    const { stdout, exitCode, stderr } = await this.script(
      sessionId,
      SCRIPTS.runStatus,
      [records.runBase, records.journalPath],
      { user },
    );
    const newline = stdout.indexOf(0x0a);
    if (exitCode !== 0 || newline < 0)
      throw new SandboxError('failed', `reading the run status failed: ${stderr.trim().slice(0, 300)}`);
    const header = JSON.parse(stdout.subarray(0, newline).toString('utf8')) as {
      attempt: number;
      state: RunState;
      exit: RunExit | null;
      process: RunStatus['process'] | null;
      journal: unknown;
    };
    return {
      attempt: header.attempt,
      state: header.state,
      ...(header.exit ? { exit: header.exit } : {}),
      ...(header.process ? { process: header.process } : {}),
      ...(header.journal !== null ? { journal: JSON.stringify(header.journal) } : {}),
      output: stdout.subarray(newline + 1),
    };
  }

  /** Kills a process group in the sandbox: TERM, then KILL after `graceSeconds` (default 2). */
  async kill(sessionId: string, pid: number, options: { graceSeconds?: number; runDir?: string } = {}): Promise<void> {
    if (!Number.isInteger(pid) || pid <= 1) throw new SandboxError('invalid', `refusing to kill process group ${pid}`);
    await this.script(
      sessionId,
      SCRIPTS.killGroup,
      [String(pid), String(options.graceSeconds ?? 2), options.runDir ?? ''],
      {
        user: JOURNAL_WRITER,
      },
    );
  }

  /**
   * Runs a short bash script in /workspace and returns its output (not journalled, no process
   * identity: for the hands' own bookkeeping and quick reads). As `agent` unless `user` says
   * otherwise (`JOURNAL_WRITER` for the records the agent may not write).
   */
  async script(
    sessionId: string,
    script: string,
    args: string[] = [],
    options: { user?: string } = {},
  ): Promise<{ exitCode: number; stdout: Buffer; stderr: string }> {
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const run = await this.runner.run(
      sessionId,
      ['bash', '-c', script, 'agent-script', ...args],
      options.user ?? AGENT_USER,
      { stdout: (c) => stdout.push(c), stderr: (c) => stderr.push(c) },
      { exitCode: true },
    );
    if (run.executorLost)
      throw new SandboxError('unavailable', `${run.executorLost}; a sandbox script's outcome is unknown`);
    return {
      exitCode: run.exitCode ?? -1,
      stdout: Buffer.concat(stdout),
      stderr: Buffer.concat(stderr).toString('utf8'),
    };
  }

  private async createExec(
    container: Docker.Container,
    cmd: string[],
    user = AGENT_USER,
    attachStdin = false,
  ): Promise<Docker.Exec> {
    await this.egress?.ready();
    try {
      return await container.exec({
        Cmd: cmd,
        User: user,
        WorkingDir: WORKSPACE_DIR,
        Env: this.sandboxEnv(),
        AttachStdout: true,
        AttachStderr: true,
        AttachStdin: attachStdin,
        Tty: false,
      });
    } catch (err) {
      const status = statusOf(err);
      if (status === 404 || status === 409)
        throw new SandboxError(
          'lost',
          `the sandbox container is not running (${status === 404 ? 'removed' : 'stopped'})`,
          { cause: err },
        );
      throw classifyDockerError('run a command in the sandbox', err);
    }
  }

  /** Writes files (owned by `agent`) under /workspace; missing parent directories are created. */
  async putFiles(sessionId: string, files: { path: string; content: string | Buffer; mode?: number }[]): Promise<void> {
    const pack = tar.pack();
    const dirs = new Set<string>();
    const mtime = new Date();
    for (const file of files) {
      const rel = workspaceRelative(file.path);
      const parts = rel.split('/');
      for (let i = 1; i < parts.length; i++) {
        const dir = parts.slice(0, i).join('/');
        if (dirs.has(dir)) continue;
        dirs.add(dir);
        pack.entry({ name: dir, type: 'directory', mode: 0o755, uid: AGENT_UID, gid: AGENT_UID, mtime });
      }
      pack.entry({ name: rel, mode: file.mode ?? 0o644, uid: AGENT_UID, gid: AGENT_UID, mtime }, file.content);
    }
    pack.finalize();
    await this.putArchive(sessionId, pack);
  }

  /** Extracts a tar stream at /workspace (entries should carry uid/gid 1000). */
  async putArchive(sessionId: string, archive: NodeJS.ReadableStream): Promise<void> {
    const container = this.docker.getContainer(containerNameOf(sessionId, this.namePrefix));
    await dockerCall('copy files into the sandbox', () => container.putArchive(archive, { path: WORKSPACE_DIR }));
  }

  /**
   * Removes the container and, unless `keepVolume`, the workspace and journal volumes (a quota
   * workspace's loop device is detached and its image deleted). Missing parts are fine.
   */
  async remove(sessionId: string, options: { keepVolume: boolean }): Promise<{ container: boolean; volume: boolean }> {
    checkSessionId(sessionId);
    await this.pending.get(sessionId)?.catch(() => undefined);
    this.runner.forget(sessionId);
    const container = await dockerCall(
      'remove the sandbox container',
      async () => {
        await this.docker.getContainer(containerNameOf(sessionId, this.namePrefix)).remove({ force: true, v: false });
        return true;
      },
      [404],
    );
    const volume = options.keepVolume ? false : await this.volumes.remove(sessionId);
    // egress hook: the removed container's proxy socket goes with it.
    this.egress?.release(containerNameOf(sessionId, this.namePrefix));
    return { container: container ?? false, volume };
  }

  /**
   * Every sandbox this harness made (by label, and this manager's extra labels) under this manager's
   * name prefix, with its container and volumes.
   */
  async list(): Promise<SandboxInfo[]> {
    const ours = (name: string): boolean => name.replace(/^\//, '').startsWith(this.namePrefix);
    const filters = {
      label: [`${LABEL_HARNESS}=1`, ...Object.entries(this.extraLabels).map(([key, value]) => `${key}=${value}`)],
    };
    const containers = await dockerCall('list sandbox containers', () =>
      this.docker.listContainers({ all: true, filters }),
    );
    const volumes = await dockerCall('list workspace volumes', () => this.docker.listVolumes({ filters }));
    const byId = new Map<string, SandboxInfo>();
    const entry = (id: string, labels: Record<string, string> | undefined): SandboxInfo => {
      let info = byId.get(id);
      if (!info) byId.set(id, (info = { sessionId: id }));
      if (!info.operationId && labels?.[LABEL_OPERATION]) info.operationId = labels[LABEL_OPERATION];
      if (!info.keep && labels?.[SANDBOX_LABELS.keep]) info.keep = labels[SANDBOX_LABELS.keep];
      return info;
    };
    for (const c of containers) {
      const id = c.Labels[LABEL_SANDBOX];
      if (!id || !ours(c.Names[0] ?? '')) continue;
      entry(id, c.Labels).container = {
        name: (c.Names[0] ?? '').replace(/^\//, ''),
        id: c.Id,
        state: c.State,
        status: c.Status,
        createdAt: new Date(c.Created * 1000),
      };
    }
    for (const v of volumes.Volumes ?? []) {
      const id = v.Labels?.[LABEL_SANDBOX];
      if (!id || !ours(v.Name)) continue;
      const info = entry(id, v.Labels);
      if (v.Name.startsWith(`${this.namePrefix}jr-`)) {
        info.journalVolume = { name: v.Name };
        continue;
      }
      const createdAt = (v as { CreatedAt?: string }).CreatedAt;
      const quotaImage = v.Labels[SANDBOX_LABELS.quotaImage];
      info.volume = {
        name: v.Name,
        ...(createdAt ? { createdAt: new Date(createdAt) } : {}),
        ...(quotaImage ? { quotaImage } : {}),
      };
    }
    return [...byId.values()].sort((a, b) => a.sessionId.localeCompare(b.sessionId));
  }

  /**
   * Removes leftovers: containers (running or not) created more than `olderThanMs` ago and, with
   * `volumes`, the volumes of sandboxes older than that whose container is gone. A removed container
   * is replaced on its volumes if the sandbox is used again; a removed volume is gone for good.
   */
  async gc(options: {
    olderThanMs: number;
    volumes?: boolean;
    now?: number;
    /** Only sandboxes this accepts are candidates (default: every sandbox of the harness). */
    only?: (sandbox: SandboxInfo) => boolean;
  }): Promise<GcResult> {
    const cutoff = (options.now ?? Date.now()) - options.olderThanMs;
    const result: GcResult = { removedContainers: [], removedVolumes: [] };
    for (const sandbox of await this.list()) {
      if (options.only && !options.only(sandbox)) continue;
      let containerGone = !sandbox.container;
      if (sandbox.container && sandbox.container.createdAt.getTime() <= cutoff) {
        await dockerCall(
          'remove a sandbox container',
          () => this.docker.getContainer(sandbox.container!.id).remove({ force: true }),
          [404],
        );
        result.removedContainers.push(sandbox.container.name);
        containerGone = true;
      }
      const volume = sandbox.volume;
      const old = (volume?.createdAt?.getTime() ?? 0) <= cutoff;
      if (options.volumes && containerGone && old) {
        for (const name of [volume?.name, sandbox.journalVolume?.name]) {
          if (name && (await this.volumes.removeVolume(name))) result.removedVolumes.push(name);
        }
      }
    }
    if (options.volumes) result.releasedImages = await this.volumes.releaseOrphanImages(cutoff);
    return result;
  }
}

function checkSessionId(sessionId: string): void {
  if (!isSessionId(sessionId)) {
    throw new SandboxError('invalid', `invalid session id ${JSON.stringify(sessionId)}: use ${SESSION_ID_RULE}`);
  }
}

function workspaceRelative(p: string): string {
  const rel = p.startsWith(`${WORKSPACE_DIR}/`) ? p.slice(WORKSPACE_DIR.length + 1) : p;
  if (!rel || rel.startsWith('/') || rel.split('/').some((part) => part === '..' || part === '')) {
    throw new SandboxError('invalid', `not a path inside ${WORKSPACE_DIR}: ${p}`);
  }
  return rel;
}

function parseRunOutput(all: Buffer): { attempt: number; exit: RunExit; output: Buffer } | undefined {
  let offset = 0;
  let attempt = 0;
  const pidLine = /^@@agent-pid (\d+) (\d+)$/;
  const firstEnd = all.indexOf(0x0a);
  if (firstEnd < 0) return undefined;
  const first = pidLine.exec(all.subarray(0, firstEnd).toString('latin1'));
  if (first) {
    attempt = Number(first[2]);
    offset = firstEnd + 1;
  }
  const exitEnd = all.indexOf(0x0a, offset);
  if (exitEnd < 0) return undefined;
  const line = all.subarray(offset, exitEnd).toString('utf8');
  if (!line.startsWith('@@agent-exit ')) return undefined;
  return {
    attempt,
    exit: JSON.parse(line.slice('@@agent-exit '.length)) as RunExit,
    output: all.subarray(exitEnd + 1),
  };
}
