/**
 * Coding tasks on real third-party projects, fetched from their registries when the test runs, with
 * nothing in the repository describing its environment (real Temporal, Docker, a local bare remote,
 * the scripted agent through the Anthropic SDK). The harness detects each project's toolchain, builds
 * the environment from the registries, and the project's own whole test suite is the task's
 * `verify`:
 *  - six 1.16.0, the sdist from PyPI (setup.py; pytest): Python with pip and venv;
 *  - golang.org/x/sync from the Go module proxy (go.mod names its Go): that Go toolchain;
 *  - commons-cli 1.4's sources and JUnit 4 tests from Maven Central, built by Maven (a pom written
 *    here; its own pom needs the Apache parent's release plugins): a JDK, Maven, Maven Central
 *    through the egress proxy.
 * A second run on the Maven project reuses the environment (no build) and the dependency cache: it
 * passes with no network at all.
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

jest.setTimeout(1_800_000);

const SIX: RealProject = {
  name: 'six 1.16.0 from PyPI',
  init: [
    '#!/usr/bin/env bash',
    '# The project is a setup.py package tested with pytest: a venv with both.',
    'set -euo pipefail',
    'cd "$(dirname "$0")"',
    '[ -x .venv/bin/python ] || python3 -m venv .venv',
    '.venv/bin/pip install -q pytest -e .',
    '',
  ].join('\n'),
  test: '.venv/bin/python -m pytest -q',
  ignore: ['.venv/', '*.egg-info/', '__pycache__/', '.pytest_cache/'],
  feature: {
    id: 'six-version-info',
    description: "six_version_info() returns six's version as a tuple of ints",
    steps: [
      'Run `.venv/bin/python -c "from versiontuple import six_version_info as v; print(v())"`',
      'It prints `(1, 16, 0)`',
    ],
    verify: '.venv/bin/python -m pytest -q test_versiontuple.py',
    files: {
      'versiontuple.py': `"""six's version as a tuple of ints."""\nimport six\n\n\ndef six_version_info():\n    return tuple(int(part) for part in six.__version__.split("."))\n`,
      'test_versiontuple.py': `from versiontuple import six_version_info\n\n\ndef test_version_info_is_a_tuple_of_ints():\n    assert six_version_info() == (1, 16, 0)\n`,
    },
  },
};

const XSYNC: RealProject = {
  name: 'golang.org/x/sync from the Go module proxy',
  init: [
    '#!/usr/bin/env bash',
    'set -euo pipefail',
    'cd "$(dirname "$0")"',
    'go version',
    'go mod download',
    'go build ./...',
    '',
  ].join('\n'),
  test: 'go test ./...',
  ignore: [],
  feature: {
    id: 'tally-counter',
    description: 'package tally: a counter safe to add to from many goroutines',
    steps: ['Run `go test ./tally/`', 'It passes'],
    verify: 'go test ./tally/',
    files: {
      'tally/tally.go': `// Package tally counts events added from many goroutines at once.\npackage tally\n\nimport "sync/atomic"\n\n// Counter is a count that goroutines may add to concurrently.\ntype Counter struct{ n atomic.Int64 }\n\n// Add adds delta and returns the new count.\nfunc (c *Counter) Add(delta int64) int64 { return c.n.Add(delta) }\n\n// Value is the count now.\nfunc (c *Counter) Value() int64 { return c.n.Load() }\n`,
      'tally/tally_test.go': `package tally_test\n\nimport (\n\t"testing"\n\n\t"golang.org/x/sync/errgroup"\n\t"golang.org/x/sync/tally"\n)\n\nfunc TestCounterFromManyGoroutines(t *testing.T) {\n\tvar c tally.Counter\n\tvar g errgroup.Group\n\tfor i := 0; i < 100; i++ {\n\t\tg.Go(func() error { c.Add(1); return nil })\n\t}\n\tif err := g.Wait(); err != nil {\n\t\tt.Fatal(err)\n\t}\n\tif got := c.Value(); got != 100 {\n\t\tt.Fatalf("got %d, want 100", got)\n\t}\n}\n`,
    },
  },
};

const COMMONS_CLI: RealProject = {
  name: 'commons-cli 1.4 from Maven Central',
  init: ['#!/usr/bin/env bash', 'set -euo pipefail', 'cd "$(dirname "$0")"', 'mvn -B -q test', ''].join('\n'),
  // Offline: everything was resolved by init.sh into the dependency cache.
  test: 'mvn -B -q -o test',
  ignore: ['target/'],
  feature: {
    id: 'option-count',
    description: 'OptionCount.of(options) says how many options a set of options holds',
    steps: ['Run `mvn -B -q -o test -Dtest=OptionCountTest`', 'It passes'],
    verify: 'mvn -B -q -o test -Dtest=OptionCountTest -Dsurefire.failIfNoSpecifiedTests=false',
    files: {
      'src/main/java/org/apache/commons/cli/OptionCount.java': `package org.apache.commons.cli;\n\n/** How many options a set of options holds. */\npublic final class OptionCount {\n    private OptionCount() {}\n\n    public static int of(Options options) {\n        return options.getOptions().size();\n    }\n}\n`,
      'src/test/java/org/apache/commons/cli/OptionCountTest.java': `package org.apache.commons.cli;\n\nimport static org.junit.Assert.assertEquals;\n\nimport org.junit.Test;\n\npublic class OptionCountTest {\n    @Test\n    public void countsTheOptions() {\n        Options options = new Options().addOption("a", false, "first").addOption("b", true, "second");\n        assertEquals(2, OptionCount.of(options));\n    }\n}\n`,
    },
  },
};

const PROJECTS = [SIX, XSYNC, COMMONS_CLI];

/** One scripted agent for the three projects: each operation's goal names its project (spec or feature id). */
function script(request: ScriptedRequest) {
  const goal = firstUserText(request);
  const project = PROJECTS.find((p) => goal.includes(`project: ${p.name}`) || goal.includes(`id: ${p.feature.id}`));
  return project ? realProjectScenario(project)(request) : undefined;
}

const run = (cmd: string, args: string[], cwd: string): string =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** six's sdist, as pip downloads it. */
function fetchSix(dir: string): string {
  const into = path.join(dir, 'download-six');
  fs.mkdirSync(into);
  run('python3', ['-m', 'pip', 'download', '-q', '--no-binary', ':all:', '--no-deps', '-d', into, 'six==1.16.0'], dir);
  run('tar', ['-xzf', 'six-1.16.0.tar.gz'], into);
  return path.join(into, 'six-1.16.0');
}

/** golang.org/x/sync's newest release, as the go command downloads it. */
function fetchXSync(dir: string): string {
  const info = JSON.parse(run('go', ['mod', 'download', '-json', 'golang.org/x/sync@latest'], dir)) as { Dir: string };
  const into = path.join(dir, 'x-sync');
  fs.cpSync(info.Dir, into, { recursive: true });
  run('chmod', ['-R', 'u+w', into], dir);
  return into;
}

/** commons-cli 1.4's sources and test sources from Maven Central, with a pom that builds them. */
/** Short JVMs, as many projects configure them: the quick compiler only and one GC thread. */
const SHORT_JVM = '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC';

function fetchCommonsCli(dir: string): string {
  const into = path.join(dir, 'commons-cli');
  const base = 'https://repo.maven.apache.org/maven2/commons-cli/commons-cli/1.4/commons-cli-1.4';
  for (const [classifier, folder] of [
    ['sources', 'src/main/java'],
    ['test-sources', 'src/test/java'],
  ] as const) {
    const jar = path.join(dir, `${classifier}.jar`);
    run('curl', ['-fsS', '-o', jar, `${base}-${classifier}.jar`], dir);
    fs.mkdirSync(path.join(into, folder), { recursive: true });
    run('unzip', ['-q', jar, '-x', 'META-INF/*', '-d', path.join(into, folder)], dir);
  }
  fs.writeFileSync(
    path.join(into, 'pom.xml'),
    `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>commons-cli</groupId>
  <artifactId>commons-cli</artifactId>
  <version>1.4</version>
  <properties>
    <maven.compiler.release>8</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency><groupId>junit</groupId><artifactId>junit</artifactId><version>4.13.2</version><scope>test</scope></dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.13.0</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-surefire-plugin</artifactId><version>3.2.5</version>
        <configuration><argLine>${SHORT_JVM}</argLine></configuration></plugin>
    </plugins>
  </build>
</project>
`,
  );
  // Maven's own JVM (surefire's gets `argLine` above): about half the CPU of their few seconds of work.
  fs.mkdirSync(path.join(into, '.mvn'), { recursive: true });
  fs.writeFileSync(path.join(into, '.mvn', 'jvm.config'), `${SHORT_JVM}\n`);
  return into;
}

let h: TaskHarness;
const remotes = new Map<RealProject, TestRemote>();
const runs = new Map<RealProject, Promise<CodingTaskResult>>();
const docker = new Docker();

function startTask(project: RealProject, taskId: string, egress?: 'none'): Promise<CodingTaskResult> {
  const remote = remotes.get(project)!;
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
    .then((handle) => taskResult(handle));
}

beforeAll(async () => {
  h = await startTaskHarness({}, { script });
  const sources = new Map<RealProject, string>([
    [SIX, fetchSix(h.dir)],
    [XSYNC, fetchXSync(h.dir)],
    [COMMONS_CLI, fetchCommonsCli(h.dir)],
  ]);
  for (const [project, source] of sources)
    remotes.set(project, makeRemote(h.dir, project.feature.id, source, `${project.name}, as published`));
  // The three run at once, as three nights' tasks on one hands host would.
  for (const project of PROJECTS)
    runs.set(project, startTask(project, `real-${project.feature.id}-${Date.now().toString(36)}`));
  for (const promise of runs.values()) promise.catch(() => undefined);
});

afterAll(async () => {
  const caches = new Set<string>();
  for (const promise of runs.values()) {
    const cache = await promise.then((r) => r.environment?.cache).catch(() => undefined);
    if (cache) caches.add(cache);
  }
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
  expect({ state: result.state, reason: result.reason }).toEqual({ state: 'completed', reason: 'all features pass' });
  expect(result.features).toEqual([
    expect.objectContaining({ id: project.feature.id, passes: true, passedThisRun: true }),
  ]);
  expect(result.ledger.filter((entry) => entry.kind === 'feature').map((entry) => entry.verified)).toEqual([true]);
  expect(result.report).toMatch(/\| environment \| detected: /);
}

it('a Python sdist from PyPI: detected from setup.py, pip and venv installed, its pytest suite passes', async () => {
  const result = await runs.get(SIX)!;
  expectPassed(result, SIX);
  expect(result.environment).toMatchObject({
    source: 'detected',
    files: expect.arrayContaining(['setup.py', 'setup.cfg']),
    toolchains: { python: { version: expect.stringMatching(/^3\.11\./) } },
  });
});

it('a Go module from the module proxy: the Go its go.mod names, its tests pass', async () => {
  const result = await runs.get(XSYNC)!;
  expectPassed(result, XSYNC);
  const goLine = /^go (\d+\.\d+(?:\.\d+)?)$/m.exec(
    fs.readFileSync(path.join(remotes.get(XSYNC)!.bare, '..', XSYNC.feature.id, 'go.mod'), 'utf8'),
  );
  expect(result.environment).toMatchObject({
    source: 'detected',
    files: ['go.mod'],
    toolchains: { go: { from: 'go.mod go line' } },
  });
  expect(result.environment!.toolchains.go!.version.startsWith(goLine![1]!)).toBe(true);
});

it('a Maven build with JUnit from Maven Central: a JDK and Maven, Maven Central through the egress proxy', async () => {
  const result = await runs.get(COMMONS_CLI)!;
  expectPassed(result, COMMONS_CLI);
  expect(result.environment).toMatchObject({
    source: 'detected',
    files: ['pom.xml'],
    toolchains: { java: { version: '17' } },
  });
});

it('the second run of a repository reuses its environment (no build) and its dependency cache', async () => {
  const first = await runs.get(COMMONS_CLI)!;
  const cache = first.environment!.cache!;
  // What the first run's Maven left in the repository's cache.
  expect(Number((await inVolume(cache, "find /cache/m2 -name '*.jar' | wc -l")).trim())).toBeGreaterThan(10);
  // The second run may reach nothing at all: its init.sh and tests can only pass from the cache.
  const second = startTask(COMMONS_CLI, `real-again-${Date.now().toString(36)}`, 'none');
  runs.set({ ...COMMONS_CLI }, second);
  const result = await second;
  expectPassed(result, COMMONS_CLI);
  expect(result.environment).toMatchObject({ image: first.environment!.image, built: false, cache });
});
