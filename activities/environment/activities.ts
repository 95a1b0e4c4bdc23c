/**
 * The environment activities (contract: `common/environment.ts`), on the hands host that holds the
 * workspace:
 *  - `prepareEnvironment`: resolve (input → devcontainer → detection → default), build the image
 *    unless its hash exists, and record it on the workspace volume before any container is made.
 *    Progress goes into the heartbeat details (`building environment <hash>: step 3/5 …`, what the
 *    Web UI shows on the pending activity) and, for an operation, into its live events.
 *  - `setUpWorkspace`: the environment's update commands, once per workspace, as the agent, with
 *    the registries reachable; a record in the journal volume makes a retry or a later operation
 *    skip them.
 */
import { createHash } from 'node:crypto';
import type Docker from 'dockerode';
import { CancelledFailure } from '@temporalio/common';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import {
  type EnvironmentActivities,
  type PrepareEnvironmentInput,
  type PreparedEnvironment,
  type SetUpWorkspaceInput,
  type SetUpWorkspaceResult,
} from '../../common/environment';
import { LIVE_TOPIC, type LiveEvent } from '../../common/live';
import { cacheVolumeNameOf } from '../../common/sandbox-names';
import { beginToolEgress, finishToolEgress } from '../egress/tool-egress';
import { currentActivity, Heartbeat } from '../heartbeat';
import { JOURNAL_DIR, JOURNAL_WRITER } from '../hands/journal-store';
import { SandboxError } from '../hands/docker-calls';
import type { SandboxLifecycle } from '../hands/sandbox-lifecycle';
import type { Sandboxes } from '../hands/sandboxes';
import { checkSeedSource, redactUserinfo } from '../hands/seed-source';
import type { EgressHost } from '../egress/egress-host';
import { EnvironmentBuilder, type BuildProgress } from './builder';
import { DebianTwins, type SandboxImageDefinition } from './debian-twin';
import { EnvironmentError, toEnvironmentFailure } from './errors';
import { cloneFiles, commitFiles, directoryFiles, type RepoFiles } from './repo-files';
import { resolveEnvironment } from './resolve';

export interface EnvironmentDeps {
  docker: Docker;
  sandboxes: Pick<Sandboxes, 'lifecycle' | 'commands'>;
  egress?: EgressHost;
  /** Directories a local repository may lie in (the seed rule). */
  allowedRoots: readonly string[];
  /** The host's environment, for its npm, Go and git (registries, proxies, credentials). */
  hostEnv: NodeJS.ProcessEnv;
  /** Where fetched toolchains are kept. */
  toolchainCacheDir: string;
  /** What the default image is made of: its twins on other Debian suites can then be made (Python 3.13, Java 21/25). */
  sandboxImage?: SandboxImageDefinition;
  /** The Debian security archive the host's apt uses (Rust on bookworm comes from bookworm-security). */
  debianSecurity?: string;
  heartbeatEveryMs?: number;
}

const SETUP_RECORD = `${JOURNAL_DIR}/environment-setup.json`;
const READ_RECORD = 'cat "$1" 2>/dev/null || true';
const WRITE_RECORD = 'printf "%s" "$2" > "$1.tmp" && mv -f "$1.tmp" "$1"';
const SETUP_TIMEOUT_MS = 30 * 60_000;
const TAIL_BYTES = 3_000;

export function createEnvironmentActivities(
  deps: EnvironmentDeps,
): EnvironmentActivities & { builder: EnvironmentBuilder } {
  const builder = new EnvironmentBuilder({
    docker: deps.docker,
    limits: deps.sandboxes.lifecycle.limits,
    namePrefix: deps.sandboxes.lifecycle.namePrefix,
    sandboxTools: deps.sandboxes.lifecycle.sandboxTools,
    ...(deps.egress ? { egress: deps.egress } : {}),
  });
  const twins = deps.sandboxImage ? new DebianTwins(builder, deps.sandboxImage, toolchainHost(deps)) : undefined;
  return {
    builder,
    prepareEnvironment: (input) => prepareEnvironment(deps, builder, twins, input),
    setUpWorkspace: (input) => setUpWorkspace(deps, input),
  };
}

function toolchainHost(deps: EnvironmentDeps) {
  return {
    env: deps.hostEnv,
    cacheDir: deps.toolchainCacheDir,
    ...(deps.debianSecurity ? { debianSecurity: deps.debianSecurity } : {}),
    ...(deps.egress ? { isRegistry: (url: string) => deps.egress!.isRegistry(url) } : {}),
  };
}

async function prepareEnvironment(
  deps: EnvironmentDeps,
  builder: EnvironmentBuilder,
  twins: DebianTwins | undefined,
  input: PrepareEnvironmentInput,
): Promise<PreparedEnvironment> {
  const activity = currentActivity();
  const heartbeat = new Heartbeat<Record<string, unknown>>(activity, deps.heartbeatEveryMs ?? 1_000, {
    sessionId: input.sessionId,
    environment: 'resolving',
  });
  const live = liveProgress(input);
  let files: RepoFiles | undefined;
  try {
    const manager = deps.sandboxes.lifecycle;
    const existing = await manager.workspaceEnvironment(input.sessionId);
    if (existing) return keptEnvironment(existing);
    files = await repositoryFiles(deps, input);
    const progressOf =
      (what: string) =>
      (progress: BuildProgress): void => {
        const line = `building ${what} ${progress.hash.slice(0, 12)}: step ${progress.step}/${progress.steps} ${progress.title}`;
        heartbeat.merge({ environment: line, tail: progress.tail });
        live.publish(line, progress.tail);
      };
    let twinMs = 0;
    const resolved = await resolveEnvironment({
      ...(files ? { files } : {}),
      ...(input.environment !== undefined ? { input: input.environment } : {}),
      defaultImage: manager.defaultImage,
      probe: (image) => builder.probe(image),
      host: toolchainHost(deps),
      ...(twins
        ? {
            twin: async (suite) => {
              const twin = await twins.image(
                suite,
                manager.defaultImage,
                progressOf(`the Debian ${suite} base`),
                activity?.cancellationSignal,
              );
              twinMs += twin.ms;
              return twin.image;
            },
          }
        : {}),
    });
    let image = manager.defaultImage;
    let hash = '';
    let built = false;
    let buildMs: number | undefined;
    if (resolved.recipe) {
      const outcome = await builder.build(resolved.recipe, progressOf('environment'), activity?.cancellationSignal);
      ({ image, hash, built } = outcome);
      if (built || twinMs) buildMs = outcome.ms + twinMs;
    }
    // Debian's Rust is whatever its archive has now (at least the version planned): the built image says which.
    if (resolved.toolchains.rust && resolved.recipe) {
      const rust = (await builder.probe(image)).rust;
      if (rust) resolved.toolchains.rust = { ...resolved.toolchains.rust, version: rust };
    }
    const cache = input.cacheKey ? cacheVolumeNameOf(digest(input.cacheKey), manager.namePrefix) : undefined;
    const assigned = await manager.assignEnvironment(
      input.sessionId,
      { image, ...(cache ? { cache } : {}), source: resolved.source, ...(hash ? { hash } : {}) },
      {
        ...(input.operationId ? { operationId: input.operationId } : {}),
        cacheOf: redactUserinfo(input.cacheKey ?? ''),
      },
    );
    return {
      source: resolved.source,
      files: resolved.files,
      hash,
      image: assigned.image,
      toolchains: resolved.toolchains,
      ...(resolved.asks?.length ? { asks: resolved.asks } : {}),
      ...(resolved.notes.length ? { notes: resolved.notes } : {}),
      update: resolved.update,
      unsupported: resolved.unsupported,
      built,
      ...(buildMs !== undefined ? { buildMs } : {}),
      ...(assigned.cache ? { cache: assigned.cache } : {}),
      ...(assigned.existed
        ? { kept: 'the workspace was made meanwhile with another environment, which it keeps' }
        : {}),
    };
  } catch (err) {
    if (activity?.cancellationSignal.aborted) throw new CancelledFailure('environment preparation cancelled');
    throw toEnvironmentFailure(err);
  } finally {
    heartbeat.stop();
    files?.close();
    await live.close();
  }
}

/** A workspace made earlier keeps its environment: what its volume records. */
function keptEnvironment(
  existing: NonNullable<Awaited<ReturnType<SandboxLifecycle['workspaceEnvironment']>>>,
): PreparedEnvironment {
  return {
    source: existing.source ?? 'default',
    files: [],
    hash: existing.hash ?? '',
    image: existing.image,
    toolchains: {},
    update: [],
    unsupported: [],
    built: false,
    ...(existing.cache ? { cache: existing.cache } : {}),
    kept: 'the workspace already exists and keeps its environment',
  };
}

async function repositoryFiles(deps: EnvironmentDeps, input: PrepareEnvironmentInput): Promise<RepoFiles | undefined> {
  const repository = input.repository;
  if (!repository) return undefined;
  if (repository.kind === 'host-clone') return commitFiles(repository.path, repository.commit);
  const source = checkSeedSource(repository.source, deps.allowedRoots);
  if (source.kind === 'local') return directoryFiles(source.path);
  try {
    return await cloneFiles(source.url, source.ref, deps.hostEnv);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? String(err);
    throw new SandboxError(
      'failed',
      `git clone ${redactUserinfo(source.url)} failed: ${redactUserinfo(stderr.trim())}`,
    );
  }
}

async function setUpWorkspace(deps: EnvironmentDeps, input: SetUpWorkspaceInput): Promise<SetUpWorkspaceResult> {
  const { lifecycle, commands } = deps.sandboxes;
  const activity = currentActivity();
  const started = Date.now();
  const heartbeat = new Heartbeat<Record<string, unknown>>(activity, deps.heartbeatEveryMs ?? 1_000, {
    sessionId: input.sessionId,
    setUp: 'starting',
  });
  try {
    await lifecycle.ensure(input.sessionId, { ...(input.operationId ? { operationId: input.operationId } : {}) });
    const record = await commands.script(input.sessionId, READ_RECORD, [SETUP_RECORD], { user: JOURNAL_WRITER });
    if (record.stdout.length) return { ran: false, commands: input.commands.length, ms: Date.now() - started };
    for (const [index, command] of input.commands.entries()) {
      heartbeat.merge({ setUp: `update command ${index + 1}/${input.commands.length}: ${command.slice(0, 120)}` });
      const egress = await beginToolEgress(deps.egress, input.sessionId, lifecycle.namePrefix, 'registries');
      const result = await commands.exec(input.sessionId, {
        command,
        runBase: `${JOURNAL_DIR}/environment-setup/${index + 1}`,
        timeoutMs: input.timeoutMs ?? SETUP_TIMEOUT_MS,
        maxOutputBytes: 1024 * 1024,
        ...(activity ? { signal: activity.cancellationSignal } : {}),
      });
      const { notes } = await finishToolEgress(egress);
      if (result.kind === 'lost') throw new SandboxError('lost', result.reason);
      if (result.kind === 'executor-lost') throw new SandboxError('unavailable', result.reason);
      if (result.kind !== 'finished') throw new SandboxError('failed', 'the update command did not run');
      if (result.exit.cancelled) throw new CancelledFailure('workspace setup cancelled');
      if (result.exit.exitCode !== 0 || result.exit.timedOut) {
        const why = result.exit.timedOut ? 'timed out' : `failed with exit code ${result.exit.exitCode}`;
        throw new EnvironmentError(
          'setup-failed',
          `update command ${index + 1} (${command.slice(0, 200)}) ${why}` +
            (notes.length ? `; ${notes.join('; ')}` : '') +
            `\n--- last lines ---\n${tail(result.output)}`,
        );
      }
    }
    const written = await commands.script(
      input.sessionId,
      WRITE_RECORD,
      [SETUP_RECORD, JSON.stringify({ commands: input.commands.length, at: new Date().toISOString() })],
      { user: JOURNAL_WRITER },
    );
    if (written.exitCode !== 0)
      throw new SandboxError('failed', `could not record the workspace setup: ${written.stderr.slice(0, 300)}`);
    return { ran: true, commands: input.commands.length, ms: Date.now() - started };
  } catch (err) {
    throw toEnvironmentFailure(err);
  } finally {
    heartbeat.stop();
  }
}

/** Build progress as live events of the operation (best effort; coding tasks follow the heartbeat). */
function liveProgress(input: PrepareEnvironmentInput): {
  publish(line: string, tail: string[]): void;
  close(): Promise<void>;
} {
  let stream: WorkflowStreamClient | undefined;
  let last = '';
  return {
    publish(line, lines) {
      if (!input.live || !input.operationId || line === last) return;
      last = line;
      try {
        stream ??= WorkflowStreamClient.fromWithinActivity({ batchInterval: 1_000 });
        const event: LiveEvent = {
          kind: 'environment.progress',
          operationId: input.operationId,
          turn: 0,
          line,
          tail: lines.slice(-3),
        };
        stream.topic<LiveEvent>(LIVE_TOPIC).publish(event);
      } catch {
        // A follower misses a progress line; the build is unaffected.
      }
    },
    async close() {
      try {
        await stream?.[Symbol.asyncDispose]();
      } catch {
        // As above.
      }
    },
  };
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

function tail(output: Buffer): string {
  if (output.length <= TAIL_BYTES) return output.toString('utf8');
  return `[…]\n${output.subarray(output.length - TAIL_BYTES).toString('utf8')}`;
}
