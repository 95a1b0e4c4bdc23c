/**
 * Environment images on the real Docker engine, through the real egress proxy: a repository's
 * devcontainer.json with a Dockerfile `FROM agent-sandbox` plus a Debian package and a
 * postCreateCommand; reuse by hash; one build for two sessions asking at once; a failing step, a
 * refused host and a toolchain that does not exist, each a named error; a build whose worker was
 * killed is rebuilt from scratch, never taken half done.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { createEnvironmentActivities } from '../../activities/environment/activities';
import { BUILD_CONTAINER_INFIX } from '../../activities/environment/builder';
import { EnvironmentInventory } from '../../activities/environment/inventory';
import { EgressHost } from '../../activities/egress/egress-host';
import { secretStore } from '../../activities/secrets/store';
import type { EnvironmentInput } from '../../common/environment';
import { dockerClient } from '../../platform/docker-engine';
import { handsFixture, type HandsFixture } from '../support/hands';
import { removeRepositories, writeRepository } from '../support/repositories';

/** Under the home directory: a root the hands worker allows by default. */
const repo = (files: Record<string, string>) => writeRepository(files, { underHome: true });

jest.setTimeout(600_000);

const docker = dockerClient();
const egressRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'env-egress-'));
let egress: EgressHost;
let fx: HandsFixture;
let env: ReturnType<typeof createEnvironmentActivities>;
const prefix = `envt${randomUUID().slice(0, 6)}-`;

/** Images this file built (each test's environment is new: a marker of its own), removed afterwards. */
const builtImages = new Set<string>();

const prepare = async (
  sessionId: string,
  options: { dir?: string; environment?: EnvironmentInput; cacheKey?: string },
) => {
  const prepared = await env.prepareEnvironment({
    sessionId,
    ...(options.dir ? { repository: { kind: 'seed', source: { kind: 'local', path: options.dir } } } : {}),
    ...(options.environment ? { environment: options.environment } : {}),
    ...(options.cacheKey ? { cacheKey: options.cacheKey } : {}),
  });
  if (prepared.built && prepared.image) builtImages.add(prepared.image);
  return prepared;
};

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(ApplicationFailure);
    return err as ApplicationFailure;
  }
  throw new Error('expected a failure');
}

async function buildContainers(): Promise<string[]> {
  const all = await docker.listContainers({ all: true });
  return all
    .flatMap((c) => c.Names.map((n) => n.replace(/^\//, '')))
    .filter((n) => n.startsWith(`${prefix}${BUILD_CONTAINER_INFIX}`));
}

beforeAll(() => {
  egress = new EgressHost({
    secrets: secretStore(new Map()),
    env: { ...process.env, AGENT_EGRESS_DIR: egressRoot },
    warn: () => undefined,
  });
  fx = handsFixture({ egress, namePrefix: prefix });
  env = createEnvironmentActivities({
    docker,
    sandboxes: fx.sandboxes,
    egress,
    allowedRoots: [os.homedir()],
    hostEnv: process.env,
    toolchainCacheDir: path.join(os.tmpdir(), 'agent-env-test-toolchains'),
  });
});

afterAll(async () => {
  removeRepositories();
  await fx.cleanup();
  for (const image of builtImages)
    await docker
      .getImage(image)
      .remove()
      .catch(() => undefined);
  const caches = await docker.listVolumes({ filters: { name: [`${prefix}cache-`] } });
  for (const volume of caches.Volumes ?? [])
    await docker
      .getVolume(volume.Name)
      .remove()
      .catch(() => undefined);
  egress.shutdown();
  fs.rmSync(egressRoot, { recursive: true, force: true });
});

describe('a devcontainer.json with a Dockerfile FROM agent-sandbox', () => {
  const dir = repo({
    '.devcontainer/devcontainer.json': `{
      // what the team uses
      "build": { "dockerfile": "Dockerfile", "args": { "PACKAGE": "jq" } },
      "containerEnv": { "GREETING": "hello from the devcontainer" },
      "postCreateCommand": "echo '{\\"made\\": \\"by postCreateCommand\\"}' | jq -r .made > .setup-done",
      "customizations": { "vscode": {} }
    }`,
    '.devcontainer/Dockerfile': `FROM agent-sandbox\nARG PACKAGE\nRUN apt-get update && apt-get install -y --no-install-recommends $PACKAGE && rm -rf /var/lib/apt/lists/*\n`,
  });
  it('builds once, runs the sandbox in it, sets the workspace up once, and is reused by hash', async () => {
    const one = fx.sessionId('dc');
    const prepared = await prepare(one, { dir, cacheKey: dir });
    expect(prepared).toMatchObject({
      source: 'devcontainer',
      files: ['.devcontainer/devcontainer.json', '.devcontainer/Dockerfile'],
      unsupported: ['customizations'],
      update: [`echo '{"made": "by postCreateCommand"}' | jq -r .made > .setup-done`],
    });
    expect(prepared.image).toMatch(/^agent-env:[0-9a-f]{16}$/);
    expect(prepared.cache).toMatch(new RegExp(`^${prefix}cache-[0-9a-f]{16}$`));

    await fx.sandboxes.lifecycle.ensure(one);
    expect(
      await fx.sh(
        one,
        'jq --version && echo "$GREETING" && id -u && echo "$PIP_CACHE_DIR" && touch /var/cache/agent/mine',
      ),
    ).toMatch(/^jq-1\.\d+\nhello from the devcontainer\n1000\n\/var\/cache\/agent\/pip\n$/);
    const setUp = await env.setUpWorkspace({ sessionId: one, commands: prepared.update });
    expect(setUp.ran).toBe(true);
    expect(await fx.sh(one, 'cat .setup-done')).toBe('by postCreateCommand\n');
    expect((await env.setUpWorkspace({ sessionId: one, commands: prepared.update })).ran).toBe(false);

    // Another workspace of the same repository: the same image, not built again, and the same cache.
    const two = fx.sessionId('dc');
    const again = await prepare(two, { dir, cacheKey: dir });
    expect(again).toMatchObject({ image: prepared.image, hash: prepared.hash, built: false, cache: prepared.cache });
    await fx.sandboxes.lifecycle.ensure(two);
    expect(await fx.sh(two, 'ls /var/cache/agent')).toMatch(/mine/);
    // The workspace keeps its environment: asking again changes nothing.
    expect(await prepare(one, { environment: 'default' })).toMatchObject({
      image: prepared.image,
      kept: expect.stringMatching(/keeps/),
    });
    expect(await buildContainers()).toEqual([]);
  });
});

describe('one build per hash', () => {
  it('two sessions asking for the same new environment at once share one build', async () => {
    const marker = randomUUID();
    const since = Math.floor(Date.now() / 1000);
    const environment: EnvironmentInput = { setup: [`echo ${marker} > /etc/agent-test-marker`] };
    const [a, b] = await Promise.all([
      prepare(fx.sessionId('same'), { environment }),
      prepare(fx.sessionId('same'), { environment }),
    ]);
    expect(a.image).toBe(b.image);
    const events = await new Promise<string>((resolve, reject) =>
      docker.getEvents(
        { since, until: Math.floor(Date.now() / 1000) + 1, filters: { type: ['container'], event: ['create'] } },
        (err, stream) => {
          if (err || !stream) return reject(err);
          let text = '';
          stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
          stream.on('end', () => resolve(text));
        },
      ),
    );
    const builds = events.split('\n').filter((line) => line.includes(`${prefix}${BUILD_CONTAINER_INFIX}`));
    expect(builds).toHaveLength(1);
  });
});

describe('errors name what went wrong', () => {
  it('a failing setup command: the step, its exit code and its last lines; no image, no container left', async () => {
    const failure = await failureOf(
      prepare(fx.sessionId('fail'), { environment: { setup: ['echo about to fail >&2; exit 3'] } }),
    );
    expect(failure.type).toBe('EnvironmentBuildFailed');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toMatch(
      /^setup 1: echo about to fail >&2; exit 3: failed with exit code 3\n--- last lines ---\n[^]*about to fail/,
    );
    expect(await buildContainers()).toEqual([]);
  });

  it('a setup command that needs a host outside the registries: the egress refusal', async () => {
    const fetch = `python3 -c "import urllib.request; urllib.request.urlopen('http://example.com/', timeout=30)"`;
    const failure = await failureOf(prepare(fx.sessionId('egress'), { environment: { setup: [fetch] } }));
    expect(failure.type).toBe('EnvironmentBuildFailed');
    expect(failure.message).toMatch(/the egress proxy refused: .*example\.com/);
  });

  it('a toolchain version that does not exist, and a Dockerfile that is not in the repository', async () => {
    const go = await failureOf(prepare(fx.sessionId('go'), { environment: { toolchains: { go: '1.99.1' } } }));
    expect(go.type).toBe('EnvironmentInvalid');
    expect(go.message).toMatch(/^go: Go 1\.99\.1 \(input\) is not on the Go module proxy/);
    const dir = repo({ 'README.md': '' });
    const missing = await failureOf(
      prepare(fx.sessionId('df'), { dir, environment: { dockerfile: 'build/Dockerfile' } }),
    );
    expect(missing.message).toBe('dockerfile: build/Dockerfile does not exist in the repository');
  });

  it('a devcontainer.json that is not JSON names the place', async () => {
    const dir = repo({ '.devcontainer/devcontainer.json': '{ "image": "agent-sandbox", }\n}' });
    const failure = await failureOf(prepare(fx.sessionId('json'), { dir }));
    expect(failure.type).toBe('EnvironmentInvalid');
    expect(failure.message).toMatch(/^\.devcontainer\/devcontainer\.json: not valid JSON with comments: .* at line 2/);
  });
});

describe('a worker killed during a build', () => {
  it('leaves no image that counts as built: the next attempt starts over and finishes', async () => {
    const marker = randomUUID();
    const gate = '/tmp/agent-build-gate';
    const environment: EnvironmentInput = {
      setup: [`while [ ! -f ${gate} ]; do sleep 0.2; done; echo ${marker} > /etc/agent-marker`],
    };
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(__dirname, '..', 'support', 'environment-build-child.ts')],
      {
        env: {
          ...process.env,
          BUILD_PREFIX: prefix,
          BUILD_ENVIRONMENT: JSON.stringify(environment),
          AGENT_EGRESS_DIR: egressRoot,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    // The child says when its setup step runs; then it dies without a chance to clean up.
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (/step \d+\/\d+ setup 1/.test(out)) resolve();
      });
      child.on('exit', (code) => reject(new Error(`the build child exited early (${code}): ${out}`)));
    });
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const staleInfo = await docker.listContainers({
      all: true,
      filters: { name: [`${prefix}${BUILD_CONTAINER_INFIX}`] },
    });
    expect(staleInfo).toHaveLength(1);
    const staleId = staleInfo[0]!.Id;

    const retry = prepare(fx.sessionId('crash'), { environment });
    // The retry makes a build container of its own (the stale one is removed, never resumed) and
    // waits at the gate in it until the test opens it.
    for (;;) {
      const fresh = (await docker.listContainers({ filters: { name: [`${prefix}${BUILD_CONTAINER_INFIX}`] } })).find(
        (c) => c.Id !== staleId && c.State === 'running',
      );
      if (fresh) {
        const opener = await docker.getContainer(fresh.Id).exec({ Cmd: ['touch', gate], User: '0:0' });
        await opener.start({ Detach: true });
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const prepared = await retry;
    expect(prepared.built).toBe(true);
    const check = fx.sessionId('crash-check');
    await env.prepareEnvironment({ sessionId: check, environment });
    await fx.sandboxes.lifecycle.ensure(check);
    expect(await fx.sh(check, 'cat /etc/agent-marker')).toBe(`${marker}\n`);
    expect(await buildContainers()).toEqual([]);
  });
});

describe('listing and cleaning up', () => {
  it('agent sandbox envs lists images and caches with their workspaces; gc --environments removes only unused ones', async () => {
    const marker = randomUUID();
    const environment: EnvironmentInput = { setup: [`echo ${marker} > /etc/agent-gc-marker`] };
    const dir = repo({ 'README.md': '' });
    const kept = fx.sessionId('gc');
    const prepared = await prepare(kept, { environment, dir, cacheKey: `gc-${marker}` });
    const inventory = new EnvironmentInventory(docker, prefix);
    const listed = await inventory.list();
    const image = listed.images.find((i) => i.image === prepared.image)!;
    expect(image).toMatchObject({ hash: prepared.hash, workspaces: [expect.stringContaining(kept)] });
    expect(image.sizeBytes).toBeGreaterThan(0);
    expect(listed.caches.find((c) => c.volume === prepared.cache)).toMatchObject({
      workspaces: [expect.stringContaining(kept)],
    });

    const ours = (name: string) => name === prepared.image || name === prepared.cache;
    // In use by a workspace: kept, however old.
    expect(await inventory.gc({ olderThanMs: 0, now: Date.now() + 60_000, only: ours })).toEqual({
      removedImages: [],
      removedCaches: [],
    });
    await fx.sandboxes.lifecycle.remove(kept, { keepVolume: false });
    // Unused, but used more recently than --older-than: kept.
    expect(await inventory.gc({ olderThanMs: 3_600_000, only: ours })).toEqual({
      removedImages: [],
      removedCaches: [],
    });
    // Unused and older: removed.
    expect(await inventory.gc({ olderThanMs: 0, now: Date.now() + 60_000, only: ours })).toEqual({
      removedImages: [prepared.image],
      removedCaches: [prepared.cache],
    });
    expect((await inventory.list()).images.some((i) => i.image === prepared.image)).toBe(false);
  });
});
