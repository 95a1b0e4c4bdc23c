/**
 * Builds environment images on the hands host. A recipe runs in a build container made from its
 * base image: as root, with no network but the egress proxy under the `registries` policy (the
 * package registries the host uses, the Debian mirror among them), no credentials and the
 * sandbox's resource limits. When every step succeeded the container is committed as
 * `agent-env:<hash>` — the commit is the only thing that makes the tag, so a build that dies half
 * way leaves no image that could be taken as done; the next attempt removes the dead build container
 * and starts over. Builds of one hash in this process share one run; another process's build of
 * the same hash produces the same image (last commit wins).
 */
import { PassThrough, Writable } from 'node:stream';
import type Docker from 'dockerode';
import * as tar from 'tar-stream';
import { classifyDockerError, dockerCall, SandboxError, statusOf } from '../hands/docker-calls';
import { sandboxToolsMount } from '../hands/executor/sandbox-tools';
import type { SandboxLimits } from '../hands/sandbox-spec';
import { SANDBOX_PROXY_PORT, type EgressHost } from '../egress/egress-host';
import { substitute } from './dockerfile';
import { EnvironmentError } from './errors';
import { recipeHash, type BuildStep, type Recipe } from './recipe';
import type { BaseFacts } from './plan';

export const ENVIRONMENT_REPOSITORY = 'agent-env';
export const ENVIRONMENT_LABELS = {
  /** On environment images: the recipe's content hash. */
  hash: 'agent.environment',
  base: 'agent.environment.base',
} as const;
/** Build containers are named `<prefix>envbuild-<hash>`. */
export const BUILD_CONTAINER_INFIX = 'envbuild-';
/** Most time one build step may take. */
const STEP_TIMEOUT_MS = 30 * 60_000;
const TAIL_LINES = 40;

export interface BuildProgress {
  hash: string;
  step: number;
  steps: number;
  title: string;
  /** The step's last lines of output so far. */
  tail: string[];
}

export interface BuildOutcome {
  image: string;
  hash: string;
  built: boolean;
  ms: number;
}

export interface BuilderDeps {
  docker: Docker;
  limits: SandboxLimits;
  namePrefix: string;
  egress?: EgressHost;
  /** The host path of the sandbox tools binary (the egress forwarder runs from it). */
  sandboxTools: string;
}

export class EnvironmentBuilder {
  private readonly running = new Map<string, Promise<BuildOutcome>>();
  private readonly facts = new Map<string, Promise<BaseFacts & { id: string }>>();

  constructor(private readonly deps: BuilderDeps) {}

  /** The base image's id and the toolchains on its PATH (one throwaway container per image id). */
  async probe(image: string): Promise<BaseFacts & { id: string }> {
    const info = await this.inspectOrPull(image);
    let known = this.facts.get(info.Id);
    if (!known) {
      known = this.probeContainer(info);
      this.facts.set(info.Id, known);
      known.catch(() => this.facts.delete(info.Id));
    }
    return known;
  }

  /** The image of `recipe`: reused when its tag exists, otherwise built (once per hash at a time). */
  async build(
    recipe: Recipe,
    onProgress: (progress: BuildProgress) => void,
    signal?: AbortSignal,
  ): Promise<BuildOutcome> {
    const base = await this.probe(recipe.base);
    const hash = recipeHash(recipe, base.id);
    const image = `${ENVIRONMENT_REPOSITORY}:${hash.slice(0, 16)}`;
    return this.once(image, hash, () => this.run(recipe, base, hash, image, { kind: 'commit' }, onProgress, signal));
  }

  /**
   * A base image made by a recipe whose last step leaves a root file system as a tar file at
   * `export.path` in the build container (a debootstrap): that file becomes the image
   * `<repository>:<hash>` (`docker import`, with the Dockerfile-style `changes`). Reused when the tag
   * exists; built once per hash at a time, like `build`.
   */
  async buildRootfs(
    recipe: Recipe,
    exported: { repository: string; path: string; changes: string[] },
    onProgress: (progress: BuildProgress) => void,
    signal?: AbortSignal,
  ): Promise<BuildOutcome> {
    const base = await this.probe(recipe.base);
    const hash = recipeHash(recipe, base.id);
    const image = `${exported.repository}:${hash.slice(0, 12)}`;
    return this.once(image, hash, () =>
      this.run(recipe, base, hash, image, { kind: 'import', ...exported }, onProgress, signal),
    );
  }

  private async once(image: string, hash: string, start: () => Promise<BuildOutcome>): Promise<BuildOutcome> {
    if (await this.exists(image)) return { image, hash, built: false, ms: 0 };
    let run = this.running.get(hash);
    if (!run) {
      run = start().finally(() => this.running.delete(hash));
      this.running.set(hash, run);
    }
    return run;
  }

  private async run(
    recipe: Recipe,
    base: BaseFacts & { id: string },
    hash: string,
    image: string,
    finish: { kind: 'commit' } | { kind: 'import'; path: string; changes: string[] },
    onProgress: (progress: BuildProgress) => void,
    signal: AbortSignal | undefined,
  ): Promise<BuildOutcome> {
    const started = Date.now();
    const { docker, egress } = this.deps;
    const name = `${this.deps.namePrefix}${BUILD_CONTAINER_INFIX}${hash.slice(0, 16)}`;
    // A build container left by a dead attempt is never resumed: its state is unknown.
    await dockerCall('remove a stale build container', () => docker.getContainer(name).remove({ force: true }), [404]);
    await egress?.ready();
    const container = await this.createBuildContainer(name, recipe.base);
    const kill = () => void container.remove({ force: true }).catch(() => undefined);
    signal?.addEventListener('abort', kill);
    const call = await egress?.begin(name, 'registries');
    try {
      if (egress) await this.waitForForwarder(container);
      const state = { env: envMap(base.env), user: 'root', workdir: '/' };
      for (const [index, step] of recipe.steps.entries()) {
        const progress = (tail: string[]) =>
          onProgress({ hash, step: index + 1, steps: recipe.steps.length, title: step.title, tail });
        progress([]);
        await this.runStep(container, step, state, progress, () => call?.finish().refusals ?? []);
        if (signal?.aborted) throw new SandboxError('failed', 'the build was cancelled');
      }
      const [repo, tag] = image.split(':') as [string, string];
      if (finish.kind === 'import') await this.importRootfs(container, finish.path, repo, tag, finish.changes);
      else
        await dockerCall('commit the environment image', () =>
          container.commit({
            _query: { container: container.id, repo, tag, pause: false },
            _body: {
              Env: [...state.env].map(([k, v]) => `${k}=${v}`),
              Cmd: ['sleep', 'infinity'],
              User: '1000:1000',
              WorkingDir: '/workspace',
              Labels: { [ENVIRONMENT_LABELS.hash]: hash, [ENVIRONMENT_LABELS.base]: recipe.base },
            },
          }),
        );
      return { image, hash, built: true, ms: Date.now() - started };
    } finally {
      signal?.removeEventListener('abort', kill);
      await container.remove({ force: true }).catch(() => undefined);
      egress?.release(name);
    }
  }

  /** The tar file at `file` in the build container, imported as `repo:tag` (the tag is the last thing made). */
  private async importRootfs(
    container: Docker.Container,
    file: string,
    repo: string,
    tag: string,
    changes: string[],
  ): Promise<void> {
    const { docker } = this.deps;
    const archive = await dockerCall('export the root file system', () => container.getArchive({ path: file }));
    const extract = tar.extract();
    const imported = new Promise<void>((resolve, reject) => {
      let started = false;
      extract.on('entry', (header, stream, next) => {
        stream.on('end', next);
        if (started || header.type !== 'file') return void stream.resume();
        started = true;
        docker
          .importImage(stream, { repo, tag, changes })
          .then(
            (response) =>
              new Promise<void>((done, fail) =>
                docker.modem.followProgress(response, (err: Error | null, output: Array<{ error?: string }>) => {
                  const error = err ?? output.find((line) => line.error)?.error;
                  if (error) fail(error instanceof Error ? error : new Error(error));
                  else done();
                }),
              ),
          )
          .then(resolve, reject);
      });
      extract.on('finish', () => {
        if (!started) reject(new Error(`${file} is not a file in the build container`));
      });
      extract.on('error', reject);
    });
    archive.pipe(extract);
    try {
      await imported;
    } catch (err) {
      throw new EnvironmentError('build-failed', `import ${file} as ${repo}:${tag}: ${(err as Error).message}`);
    }
  }

  private async createBuildContainer(name: string, base: string): Promise<Docker.Container> {
    const { docker, egress, limits } = this.deps;
    try {
      const container = await docker.createContainer({
        name,
        Image: base,
        User: '0:0',
        Entrypoint: [''],
        Cmd: egress?.command ?? ['sleep', 'infinity'],
        // Each step gets the proxy's environment with its exec: the container's own would be committed
        // into the image (its values, the host's registry settings among them, belong to the host).
        Env: [],
        WorkingDir: '/',
        // A build container left behind is a leak like any sandbox (its name says what it was). No
        // label of its own: the committed image, and every container made from it, would inherit it.
        Labels: { 'agent.harness': '1' },
        HostConfig: {
          NetworkMode: 'none',
          Init: true,
          Mounts: [sandboxToolsMount(this.deps.sandboxTools), ...(egress?.mounts(name) ?? [])],
          NanoCpus: Math.round(limits.cpus * 1e9),
          Memory: limits.memoryBytes,
          MemorySwap: limits.memoryBytes,
          PidsLimit: limits.pids,
          SecurityOpt: ['no-new-privileges'],
          RestartPolicy: { Name: 'no' },
        },
      });
      await container.start();
      return container;
    } catch (err) {
      throw classifyDockerError('start the environment build container', err);
    }
  }

  private async runStep(
    container: Docker.Container,
    step: BuildStep,
    state: { env: Map<string, string>; user: string; workdir: string },
    progress: (tail: string[]) => void,
    refusals: () => string[],
  ): Promise<void> {
    switch (step.kind) {
      case 'env':
        for (const [key, value] of Object.entries(step.set)) state.env.set(key, substitute(value, state.env));
        return;
      case 'user':
        state.user = step.user;
        return;
      case 'workdir':
        await this.exec(container, ['mkdir', '-p', step.path], 'root', '/', state.env, progress, step.title, refusals);
        state.workdir = step.path;
        return;
      case 'files': {
        const pack = tar.pack();
        const upload = dockerCall('copy files into the build container', () =>
          container.putArchive(pack.pipe(new PassThrough()), { path: '/' }),
        );
        let count = 0;
        try {
          await step.pack(pack, () => {
            if (++count % 500 === 0) progress([`${count} files`]);
          });
          pack.finalize();
          await upload;
        } catch (err) {
          pack.destroy(err as Error);
          await upload.catch(() => undefined);
          throw err instanceof EnvironmentError
            ? err
            : new EnvironmentError('build-failed', `${step.title}: ${(err as Error).message}`);
        }
        return;
      }
      case 'run': {
        const env = new Map(state.env);
        for (const [key, value] of Object.entries(step.env ?? {})) env.set(key, value);
        await this.exec(
          container,
          step.argv,
          step.user ?? state.user,
          step.workdir ?? state.workdir,
          env,
          progress,
          step.title,
          refusals,
        );
      }
    }
  }

  private async exec(
    container: Docker.Container,
    argv: string[],
    user: string,
    workdir: string,
    env: Map<string, string>,
    progress: (tail: string[]) => void,
    title: string,
    refusals: () => string[],
  ): Promise<void> {
    const egressEnv = this.deps.egress?.env() ?? [];
    const exec = await dockerCall('start a build step', () =>
      container.exec({
        Cmd: argv,
        User: user,
        WorkingDir: workdir,
        Env: [...[...env].map(([k, v]) => `${k}=${v}`), ...egressEnv],
        AttachStdout: true,
        AttachStderr: true,
      }),
    );
    const tail = new LineTail(TAIL_LINES);
    let lastReport = 0;
    const sink = new Writable({
      write: (chunk: Buffer, _enc, done) => {
        tail.push(chunk);
        if (Date.now() - lastReport > 1_000) {
          lastReport = Date.now();
          progress(tail.lines(5));
        }
        done();
      },
    });
    const stream = await dockerCall('run a build step', () => exec.start({ hijack: true, stdin: false }));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      void container.kill().catch(() => undefined);
    }, STEP_TIMEOUT_MS);
    try {
      await new Promise<void>((resolve, reject) => {
        this.deps.docker.modem.demuxStream(stream, sink, sink);
        stream.on('end', resolve);
        stream.on('close', resolve);
        stream.on('error', reject);
      });
    } finally {
      clearTimeout(timer);
    }
    const info = await exec.inspect().catch((err: unknown) => {
      if (statusOf(err) === 404) return undefined;
      throw classifyDockerError('read a build step', err);
    });
    const code = info?.ExitCode;
    if (code === 0 && !timedOut) return;
    const refused = refusals();
    const why = timedOut
      ? `timed out after ${STEP_TIMEOUT_MS / 60_000} minutes`
      : code === null || code === undefined
        ? 'was stopped (the build container went away)'
        : `failed with exit code ${code}`;
    throw new EnvironmentError(
      'build-failed',
      `${title}: ${why}` +
        (refused.length ? `; the egress proxy refused: ${refused.join('; ')}` : '') +
        `\n--- last lines ---\n${tail.lines(TAIL_LINES).join('\n')}`,
    );
  }

  /** The container's first process starts the egress forwarder; the first step must not race it. */
  private async waitForForwarder(container: Docker.Container): Promise<void> {
    const port = SANDBOX_PROXY_PORT;
    const script = `for i in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && exit 0; sleep 0.1; done; exit 1`;
    await this.exec(
      container,
      ['bash', '-c', script],
      'root',
      '/',
      new Map(),
      () => undefined,
      'start the egress forwarder',
      () => [],
    );
  }

  private async exists(image: string): Promise<boolean> {
    try {
      await this.deps.docker.getImage(image).inspect();
      return true;
    } catch (err) {
      if (statusOf(err) === 404) return false;
      throw classifyDockerError('look up an environment image', err);
    }
  }

  private async inspectOrPull(image: string): Promise<Docker.ImageInspectInfo> {
    const { docker } = this.deps;
    try {
      return await docker.getImage(image).inspect();
    } catch (err) {
      if (statusOf(err) !== 404) throw classifyDockerError('look up the base image', err);
    }
    try {
      const stream = await docker.pull(image);
      await new Promise<void>((resolve, reject) =>
        docker.modem.followProgress(stream, (err) => (err ? reject(err) : resolve())),
      );
      return await docker.getImage(image).inspect();
    } catch (err) {
      throw new EnvironmentError(
        'invalid',
        `the base image ${image} does not exist on the hands host and could not be pulled (${(err as Error).message.split('\n')[0]}); ` +
          'build or load it there, or start from agent-sandbox',
      );
    }
  }

  private async probeContainer(info: Docker.ImageInspectInfo): Promise<BaseFacts & { id: string }> {
    const script = [
      'printf "python=%s\\n" "$(python3 -c "import platform; print(platform.python_version())" 2>/dev/null)"',
      'printf "node=%s\\n" "$(node -p process.versions.node 2>/dev/null)"',
      'printf "go=%s\\n" "$(go env GOVERSION 2>/dev/null | sed s/^go//)"',
      'printf "java=%s\\n" "$(java -version 2>&1 | sed -n "s/.*version \\"\\([0-9.]*\\).*/\\1/p" | head -1)"',
      'printf "rust=%s\\n" "$(rustc --version 2>/dev/null | sed -n "s/^rustc \\([0-9.]*\\).*/\\1/p")"',
      'printf "debian=%s\\n" "$(. /etc/os-release 2>/dev/null && [ "$ID" = debian ] && echo "$VERSION_CODENAME")"',
    ].join('; ');
    const { docker } = this.deps;
    let container: Docker.Container | undefined;
    try {
      container = await docker.createContainer({
        Image: info.Id,
        User: '0:0',
        Entrypoint: [''],
        Cmd: ['sh', '-c', script],
        Labels: { 'agent.harness': '1' },
        HostConfig: { NetworkMode: 'none', SecurityOpt: ['no-new-privileges'] },
      });
      await container.start();
      await container.wait();
      const logs = await container.logs({ stdout: true, stderr: false, follow: false });
      const text = demuxed(logs);
      const field = (name: string) => new RegExp(`^${name}=([0-9][0-9.]*|[a-z]+)$`, 'm').exec(text)?.[1];
      const env = info.Config?.Env ?? [];
      const facts: BaseFacts & { id: string } = {
        id: info.Id,
        path:
          env.find((e) => e.startsWith('PATH='))?.slice(5) ??
          '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        env,
      };
      for (const name of ['python', 'node', 'go', 'java', 'rust', 'debian'] as const) {
        const value = field(name);
        if (value) facts[name] = value;
      }
      return facts;
    } catch (err) {
      throw classifyDockerError(`look into the base image ${info.RepoTags?.[0] ?? info.Id}`, err);
    } finally {
      await container?.remove({ force: true }).catch(() => undefined);
    }
  }
}

function envMap(env: string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (const entry of env) {
    const at = entry.indexOf('=');
    if (at > 0) map.set(entry.slice(0, at), entry.slice(at + 1));
  }
  return map;
}

/** The output of a non-TTY container's logs: 8-byte frame headers stripped. */
function demuxed(buffer: Buffer): string {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= buffer.length) {
    const size = buffer.readUInt32BE(offset + 4);
    parts.push(buffer.subarray(offset + 8, offset + 8 + size));
    offset += 8 + size;
  }
  return Buffer.concat(parts).toString('utf8');
}

/** The last lines of a stream of output. */
class LineTail {
  private readonly kept: string[] = [];
  private partial = '';

  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    const text = this.partial + chunk.toString('utf8');
    const lines = text.split(/\r?\n|\r/);
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      this.kept.push(line.length > 400 ? `${line.slice(0, 400)}…` : line);
      if (this.kept.length > this.max) this.kept.shift();
    }
  }

  lines(count: number): string[] {
    const all = this.partial ? [...this.kept, this.partial] : this.kept;
    return all.slice(-count);
  }
}
