/**
 * Coding tasks on real third-party projects of the ecosystems most repositories of 2026 use, fetched
 * from their registries when the test runs, with nothing in the repository describing its
 * environment (real Temporal, Docker, a local bare remote, the scripted agent through the Anthropic
 * SDK). Each project's own tests are the task's `verify`; each is run twice, the second run on the
 * environment and dependency cache the first one left:
 *  - networkx 3.7, the sdist from PyPI (`requires-python = ">=3.12"`; pytest): Python 3.13 on the
 *    default image's Debian trixie twin, made on the hands host for it;
 *  - either 1.19.0, the crate from crates.io (its authors' Cargo.toml.orig and the Cargo.lock it
 *    ships, kept in the repository; serde_json for its tests): Rust from Debian, crates through the egress proxy, `~/.cargo` and `target/` in
 *    the cache volume;
 *  - a monorepo laid out here from two real packages: github.com/google/uuid v1.6.0 from the Go
 *    module proxy in `services/uuid/`, and minimist 1.2.8 from the npm registry in `web/minimist/`
 *    as a pnpm project (`packageManager: pnpm@10.34.9`, its pnpm-lock.yaml made here by that pnpm;
 *    its devDependencies trimmed to tape, what its tests run on: its lint and publish tools are not
 *    its tests): both toolchains from files below the root, `verify` in the subfolders;
 *  - more-itertools 11.2.1, the sdist from PyPI, as a uv project (its uv.lock made here by uv
 *    0.13.9 from PyPI, pytest in a dev group): uv from PyPI on the default image's Python 3.11.
 * The second runs of the Rust, monorepo and uv projects may reach nothing at all (egress `none`):
 * their init.sh and tests can only pass from the cache. pip has no offline mode (it asks its index
 * every time), so networkx's second run keeps the registries and shows the image reused.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Docker from 'dockerode';
import type { CodingTaskResult } from '../../common/coding-task';
import { realProjectScenario, type RealProject } from '../../scripted-model/scenarios/real-project';
import type { ScriptedRequest } from '../../scripted-model/script';
import { firstUserText } from '../../scripted-model/scenarios/coding-task';
import { makeRemote, startTaskHarness, taskResult, type TaskHarness, type TestRemote } from '../support/coding-task';
import { testPlatform } from '../support/env';

jest.setTimeout(2_400_000);

const NETWORKX: RealProject = {
  name: 'networkx 3.7 from PyPI',
  init: [
    '#!/usr/bin/env bash',
    '# A pyproject.toml package tested with pytest: a venv with both.',
    'set -euo pipefail',
    'cd "$(dirname "$0")"',
    '[ -x .venv/bin/python ] || python3 -m venv .venv',
    '.venv/bin/pip install -q pytest -e .',
    '',
  ].join('\n'),
  test: '.venv/bin/python -m pytest -q -p no:cacheprovider networkx/classes networkx/algorithms/shortest_paths',
  ignore: ['.venv/', '*.egg-info/', '__pycache__/'],
  feature: {
    id: 'triangle-total',
    description: 'extras.triangles.total(G) counts the triangles of a graph',
    steps: ['Run `.venv/bin/python -m pytest -q extras`', 'It passes'],
    verify: '.venv/bin/python -m pytest -q -p no:cacheprovider extras',
    files: {
      'extras/__init__.py': '',
      'extras/triangles.py': `"""How many triangles a graph has."""\nimport networkx as nx\n\n\ndef total(graph: nx.Graph) -> int:\n    return sum(nx.triangles(graph).values()) // 3\n`,
      'extras/test_triangles.py': `import networkx as nx\n\nfrom extras.triangles import total\n\n\ndef test_a_complete_graph_of_four_has_four_triangles():\n    assert total(nx.complete_graph(4)) == 4\n`,
    },
  },
};

const EITHER: RealProject = {
  name: 'either 1.19.0 from crates.io',
  init: ['#!/usr/bin/env bash', 'set -euo pipefail', 'cd "$(dirname "$0")"', 'cargo fetch --locked', ''].join('\n'),
  test: 'cargo test --offline --locked -q',
  ignore: ['target/'],
  feature: {
    id: 'flip-twice',
    description: 'flipping an Either twice gives it back (an integration test)',
    steps: ['Run `cargo test --offline --test flip_twice`', 'It passes'],
    verify: 'cargo test --offline --locked -q --test flip_twice',
    files: {
      'tests/flip_twice.rs': `use either::Either;\n\n#[test]\nfn flipping_twice_gives_it_back() {\n    let left: Either<i32, &str> = Either::Left(7);\n    assert_eq!(left.flip().flip(), Either::Left(7));\n    assert_eq!(left.flip(), Either::Right(7));\n}\n`,
    },
  },
};

const MONOREPO: RealProject = {
  name: 'a monorepo of google/uuid (Go) and minimist (pnpm)',
  init: [
    '#!/usr/bin/env bash',
    'set -euo pipefail',
    'cd "$(dirname "$0")"',
    '(cd services/uuid && go build ./...)',
    '(cd web/minimist && pnpm install --frozen-lockfile --prefer-offline)',
    '',
  ].join('\n'),
  test: '(cd services/uuid && go test ./...) && (cd web/minimist && pnpm test)',
  ignore: ['node_modules/'],
  feature: {
    id: 'uuid-and-args',
    description: 'a uuid check in services/uuid and a flag check in web/minimist, each with its test',
    steps: [
      'Run `cd services/uuid && go test -run TestAgentNil ./...`',
      'Run `cd web/minimist && pnpm exec tape test/agent.js`',
    ],
    verify: '(cd services/uuid && go test -run TestAgentNil .) && (cd web/minimist && pnpm exec tape test/agent.js)',
    files: {
      'services/uuid/agent_test.go': `package uuid\n\nimport "testing"\n\nfunc TestAgentNil(t *testing.T) {\n\tif Nil.String() != "00000000-0000-0000-0000-000000000000" {\n\t\tt.Fatal(Nil.String())\n\t}\n}\n`,
      'web/minimist/test/agent.js': `'use strict';\n\nvar parse = require('../');\nvar test = require('tape');\n\ntest('a boolean flag', function (t) {\n\tt.deepEqual(parse(['--agent']), { _: [], agent: true });\n\tt.end();\n});\n`,
    },
  },
};

const MORE_ITERTOOLS: RealProject = {
  name: 'more-itertools 11.2.1 from PyPI, a uv project',
  init: [
    '#!/usr/bin/env bash',
    '# The locked dependencies in .venv; the tests import the package from the source tree.',
    'set -euo pipefail',
    'cd "$(dirname "$0")"',
    'uv sync --frozen --no-install-project',
    '',
  ].join('\n'),
  test: '.venv/bin/python -m pytest -q -p no:cacheprovider tests',
  ignore: ['.venv/', '__pycache__/'],
  feature: {
    id: 'first-two',
    description: 'extras.first_two(iterable) gives the first two items, with more_itertools.take',
    steps: ['Run `.venv/bin/python -m pytest -q extras`', 'It passes'],
    verify: '.venv/bin/python -m pytest -q -p no:cacheprovider extras',
    files: {
      'extras/__init__.py': '',
      'extras/first.py': `"""The first two items of an iterable."""\nfrom more_itertools import take\n\n\ndef first_two(iterable):\n    return take(2, iterable)\n`,
      'extras/test_first.py': `from extras.first import first_two\n\n\ndef test_first_two():\n    assert first_two(range(10)) == [0, 1]\n`,
    },
  },
};

const PROJECTS = [NETWORKX, EITHER, MONOREPO, MORE_ITERTOOLS];

/** One scripted agent for the projects: each operation's goal names its project (spec or feature id). */
function script(request: ScriptedRequest) {
  const goal = firstUserText(request);
  const project = PROJECTS.find((p) => goal.includes(`project: ${p.name}`) || goal.includes(`id: ${p.feature.id}`));
  return project ? realProjectScenario(project)(request) : undefined;
}

const run = (cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string =>
  execFileSync(cmd, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** A PyPI sdist, as pip downloads it (whatever Python the host's pip runs on), unpacked. */
function pypiSdist(dir: string, name: string, version: string): string {
  const into = path.join(dir, `download-${name}`);
  fs.mkdirSync(into);
  run(
    'python3',
    [
      '-m',
      'pip',
      'download',
      '-q',
      '--ignore-requires-python',
      '--no-binary',
      ':all:',
      '--no-deps',
      '-d',
      into,
      `${name}==${version}`,
    ],
    dir,
  );
  const archive = fs.readdirSync(into).find((f) => f.endsWith('.tar.gz'))!;
  run('tar', ['-xzf', archive], into);
  return path.join(into, archive.replace(/\.tar\.gz$/, ''));
}

/** either's crate from crates.io's download host (the one its index's config.json names), unpacked. */
async function fetchEither(dir: string): Promise<string> {
  const config = (await (await fetch('https://index.crates.io/config.json')).json()) as { dl: string };
  const url = /\{(crate|version)\}/.test(config.dl)
    ? config.dl.replace('{crate}', 'either').replace('{version}', '1.19.0')
    : `${config.dl}/either/1.19.0/download`;
  const crate = path.join(dir, 'either.crate');
  fs.writeFileSync(crate, Buffer.from(await (await fetch(url)).arrayBuffer()));
  run('tar', ['-xzf', crate], dir);
  // The manifest as its authors wrote it: the published one is normalized for the registry (its
  // test targets listed, a new file under tests/ not found).
  const source = path.join(dir, 'either-1.19.0');
  fs.renameSync(path.join(source, 'Cargo.toml.orig'), path.join(source, 'Cargo.toml'));
  // The crate ships its Cargo.lock, and the repository keeps it (cargo's advice for libraries since
  // 2023), though this one's .gitignore still names it.
  const ignore = path.join(source, '.gitignore');
  fs.writeFileSync(ignore, fs.readFileSync(ignore, 'utf8').replace(/^\/Cargo\.lock\n/m, ''));
  return source;
}

/** google/uuid from the Go module proxy and minimist from the npm registry, laid out as one repository. */
function monorepo(dir: string): string {
  const into = path.join(dir, 'monorepo');
  const uuid = JSON.parse(run('go', ['mod', 'download', '-json', 'github.com/google/uuid@v1.6.0'], dir)) as {
    Dir: string;
  };
  fs.cpSync(uuid.Dir, path.join(into, 'services', 'uuid'), { recursive: true });
  run('chmod', ['-R', 'u+w', into], dir);
  const web = path.join(into, 'web');
  fs.mkdirSync(web, { recursive: true });
  const tgz = run('npm', ['pack', 'minimist@1.2.8', '--silent'], web).trim();
  run('tar', ['-xzf', tgz], web);
  fs.rmSync(path.join(web, tgz));
  fs.renameSync(path.join(web, 'package'), path.join(web, 'minimist'));
  const manifestPath = path.join(web, 'minimist', 'package.json');
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8')) as Record<string, unknown>;
  manifest.devDependencies = { tape: (manifest.devDependencies as Record<string, string>).tape };
  manifest.scripts = { test: 'tape "test/**/*.js"' };
  manifest.packageManager = 'pnpm@10.34.9';
  fs.writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  run('npx', ['--yes', 'pnpm@10.34.9', 'install', '--lockfile-only', '--silent'], path.join(web, 'minimist'));
  return into;
}

/** more-itertools with pytest in a dev group and the uv.lock uv 0.13.9 (from PyPI's wheel) makes for it. */
function moreItertools(dir: string): string {
  const source = pypiSdist(dir, 'more-itertools', '11.2.1');
  const pyproject = path.join(source, 'pyproject.toml');
  fs.appendFileSync(pyproject, '\n[dependency-groups]\ndev = ["pytest"]\n');
  const wheels = path.join(dir, 'uv-wheel');
  run(
    'python3',
    ['-m', 'pip', 'download', '-q', '--no-deps', '--only-binary', ':all:', '-d', wheels, 'uv==0.13.9'],
    dir,
  );
  const wheel = fs.readdirSync(wheels).find((f) => f.endsWith('.whl'))!;
  run('unzip', ['-q', '-o', wheel, 'uv-0.13.9.data/scripts/uv', '-d', wheels], wheels);
  const uv = path.join(wheels, 'uv-0.13.9.data', 'scripts', 'uv');
  fs.chmodSync(uv, 0o755);
  run(uv, ['lock', '--quiet'], source, {
    ...process.env,
    UV_PYTHON_DOWNLOADS: 'never',
    UV_CACHE_DIR: path.join(dir, 'uv-cache'),
  });
  return source;
}

let h: TaskHarness;
const remotes = new Map<RealProject, TestRemote>();
const firstRuns = new Map<RealProject, Promise<CodingTaskResult>>();
const secondRuns = new Map<RealProject, Promise<CodingTaskResult>>();
const times = new Map<string, number>();
const docker = new Docker();

function startTask(project: RealProject, taskId: string, egress?: 'none'): Promise<CodingTaskResult> {
  const remote = remotes.get(project)!;
  const started = Date.now();
  return h
    .start(
      {
        repo: { kind: 'git', url: remote.url },
        spec: `project: ${project.name}\n\n${project.feature.description}.`,
        verify: project.test,
        verifyTimeoutMs: 1_200_000,
        budget: { maxTurnsPerFeature: 10, maxAttemptsPerFeature: 1 },
        ...(egress ? { egress } : {}),
      },
      taskId,
    )
    .then((handle) => taskResult(handle))
    .finally(() => times.set(taskId, Date.now() - started));
}

const stamp = () => Date.now().toString(36);

beforeAll(async () => {
  h = await startTaskHarness({}, { script });
  const sources = new Map<RealProject, string>([
    [NETWORKX, pypiSdist(h.dir, 'networkx', '3.7')],
    [EITHER, await fetchEither(h.dir)],
    [MONOREPO, monorepo(h.dir)],
    [MORE_ITERTOOLS, moreItertools(h.dir)],
  ]);
  for (const [project, source] of sources)
    remotes.set(project, makeRemote(h.dir, project.feature.id, source, `${project.name}, as published`));
  // First nights at once, as on one hands host.
  for (const project of PROJECTS) firstRuns.set(project, startTask(project, `eco-${project.feature.id}-${stamp()}`));
  for (const promise of firstRuns.values()) promise.catch(() => undefined);
});

afterAll(async () => {
  const caches = new Set<string>();
  for (const promise of [...firstRuns.values(), ...secondRuns.values()]) {
    const cache = await promise.then((r) => r.environment?.cache).catch(() => undefined);
    if (cache) caches.add(cache);
  }
  console.log(`run times: ${[...times].map(([id, ms]) => `${id} ${Math.round(ms / 1000)} s`).join(', ')}`);
  await h?.close();
  for (const cache of caches)
    await docker
      .getVolume(cache)
      .remove()
      .catch(() => undefined);
});

/** Runs `script` as root in a throwaway container with `volume` at /cache (read-only); its stdout. */
async function inVolume(volume: string, script: string): Promise<string> {
  const container = await docker.createContainer({
    Image: testPlatform().sandboxImage,
    Cmd: ['sh', '-c', script],
    User: '0:0',
    HostConfig: { NetworkMode: 'none', Binds: [`${volume}:/cache:ro`] },
  });
  try {
    await container.start();
    await container.wait();
    const logs = await container.logs({ stdout: true, stderr: false, follow: false });
    let text = '';
    for (let at = 0; at + 8 <= logs.length; at += 8 + logs.readUInt32BE(at + 4))
      text += logs.subarray(at + 8, at + 8 + logs.readUInt32BE(at + 4)).toString('utf8');
    return text;
  } finally {
    await container.remove({ force: true });
  }
}

function expectPassed(result: CodingTaskResult, project: RealProject): void {
  // A failed run says why in its report (the verify's output among it).
  if (result.state !== 'completed' || result.reason !== 'all features pass')
    throw new Error(`${project.name}: ${result.state}, ${result.reason}\n${result.report}`);
  expect(result.features).toEqual([
    expect.objectContaining({ id: project.feature.id, passes: true, passedThisRun: true }),
  ]);
  expect(result.ledger.filter((entry) => entry.kind === 'feature').map((entry) => entry.verified)).toEqual([true]);
  expect(result.report).toMatch(/\| environment \| detected: /);
}

/** The second night: the same image (not built), the same cache; `none`: nothing reachable at all. */
async function secondRun(project: RealProject, egress?: 'none'): Promise<CodingTaskResult> {
  const first = await firstRuns.get(project)!;
  const second = startTask(project, `eco-again-${project.feature.id}-${stamp()}`, egress);
  secondRuns.set(project, second);
  const result = await second;
  expectPassed(result, project);
  expect(result.environment).toMatchObject({
    image: first.environment!.image,
    built: false,
    cache: first.environment!.cache,
  });
  return result;
}

describe('a PyPI project that needs Python ≥ 3.12 (networkx 3.7)', () => {
  it("runs on Python 3.13 from the default image's Debian trixie twin, and its tests pass", async () => {
    const result = await firstRuns.get(NETWORKX)!;
    expectPassed(result, NETWORKX);
    expect(result.environment).toMatchObject({
      source: 'detected',
      files: ['pyproject.toml', 'setup.cfg'],
      toolchains: { python: { version: expect.stringMatching(/^3\.13\./), from: 'pyproject.toml requires-python' } },
      asks: [{ file: 'pyproject.toml', wants: 'python >=3.12,!=3.14.1' }],
    });
    expect(result.report).toMatch(/asked for by pyproject\.toml \(python >=3\.12,!=3\.14\.1\)/);
  });

  it('second run: the image (and the twin under it) is reused, not built', async () => {
    // pip asks its index on every install and caches only what the registry marks cacheable (the
    // registry here marks nothing): what its second night reuses is the environment.
    await secondRun(NETWORKX);
  });
});

describe('a crate from crates.io (either 1.19.0)', () => {
  it("gets Debian's Rust, fetches its crates through the egress proxy, and its tests pass", async () => {
    const result = await firstRuns.get(EITHER)!;
    expectPassed(result, EITHER);
    expect(result.environment).toMatchObject({
      source: 'detected',
      files: ['Cargo.toml'],
      toolchains: { rust: { version: expect.stringMatching(/^1\.(9[6-9]|\d{3})\./) } },
    });
  });

  it('second run with no network at all: crates and target/ from the cache volume', async () => {
    const first = await firstRuns.get(EITHER)!;
    expect(await inVolume(first.environment!.cache!, 'ls /cache/cargo/registry/cache/*/ | grep -c crate')).not.toBe(
      '0\n',
    );
    await secondRun(EITHER, 'none');
  });
});

describe('a monorepo: a Go module in services/uuid, a pnpm project in web/minimist', () => {
  it('gets both toolchains from files below the root, says which file asked for what, and verify runs in the subfolders', async () => {
    const result = await firstRuns.get(MONOREPO)!;
    expectPassed(result, MONOREPO);
    expect(result.environment).toMatchObject({
      source: 'detected',
      files: expect.arrayContaining([
        'services/uuid/go.mod',
        'web/minimist/package.json',
        'web/minimist/pnpm-lock.yaml',
      ]),
      toolchains: {
        go: { from: expect.stringMatching(/^services\/uuid\/go\.mod/) },
        node: { from: expect.stringMatching(/^web\/minimist\/package\.json/) },
      },
    });
    expect(result.environment!.asks).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ file: 'services/uuid/go.mod' }),
        { file: 'web/minimist/package.json', wants: 'pnpm 10.34.9' },
      ]),
    );
    expect(result.report).toMatch(/asked for by .*services\/uuid\/go\.mod \(go/);
  });

  it('a pnpm project: the pnpm its packageManager names, from the npm registry, its store in the cache volume', async () => {
    const result = await firstRuns.get(MONOREPO)!;
    expect(result.environment!.toolchains.pnpm).toEqual({
      version: '10.34.9',
      from: 'web/minimist/package.json packageManager',
    });
    expect(await inVolume(result.environment!.cache!, 'ls /cache/pnpm-store')).toMatch(/^v10$/m);
  });

  it('second run with no network at all: Go and pnpm from the cache volume', async () => {
    await secondRun(MONOREPO, 'none');
  });
});

describe('a uv project (more-itertools 11.2.1 with its uv.lock)', () => {
  it("gets uv from PyPI, on the image's Python (uv downloads none), and its tests pass", async () => {
    const result = await firstRuns.get(MORE_ITERTOOLS)!;
    expectPassed(result, MORE_ITERTOOLS);
    expect(result.environment).toMatchObject({
      source: 'detected',
      files: expect.arrayContaining(['pyproject.toml', 'uv.lock']),
      toolchains: {
        python: { version: expect.stringMatching(/^3\.11\./) },
        uv: { version: expect.stringMatching(/^\d+\.\d+\.\d+$/), from: 'uv.lock' },
      },
    });
  });

  it('second run with no network at all: uv installs from its cache in the volume', async () => {
    await secondRun(MORE_ITERTOOLS, 'none');
  });
});
