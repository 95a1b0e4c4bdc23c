/**
 * What resolution decides before anything is built, on the real default image (probed on the real
 * engine): a toolchain no base can give is an error naming what was asked and everything tried; a
 * Gradle wrapper whose distribution is not on a registry is a note naming it, the rest of the
 * environment still made. No twin is built here (test/environment/current-ecosystems builds one).
 */
import * as os from 'node:os';
import * as path from 'node:path';
import Docker from 'dockerode';
import { EnvironmentBuilder } from '../../activities/environment/builder';
import { EnvironmentError } from '../../activities/environment/errors';
import { directoryFiles } from '../../activities/environment/repo-files';
import { resolveEnvironment, type ResolvedEnvironment } from '../../activities/environment/resolve';
import { DEFAULT_SANDBOX_LIMITS } from '../../activities/hands/sandbox-spec';
import type { EnvironmentInput } from '../../common/environment';
import { testPlatform } from '../support/env';
import { removeRepositories, writeRepository } from '../support/repositories';

const { sandboxImage, sandboxTools } = testPlatform();
const builder = new EnvironmentBuilder({
  docker: new Docker(),
  limits: DEFAULT_SANDBOX_LIMITS,
  namePrefix: 'choices-',
  sandboxTools,
});
/** Twins asked for: none may be (each case here must be decided before one is needed). */
const twinsAsked: string[] = [];

afterAll(() => removeRepositories());

function resolve(files: Record<string, string>, input?: EnvironmentInput): Promise<ResolvedEnvironment> {
  return resolveEnvironment({
    files: directoryFiles(writeRepository(files)),
    ...(input ? { input } : {}),
    defaultImage: sandboxImage,
    probe: (image) => builder.probe(image),
    host: {
      env: process.env,
      cacheDir: path.join(os.tmpdir(), 'agent-env-test-toolchains'),
      debianSecurity: 'http://deb.debian.org/debian-security',
      isRegistry: async (url) => new URL(url).hostname === 'repo.maven.apache.org',
    },
    twin: (suite) => {
      twinsAsked.push(suite);
      return Promise.reject(new Error(`no twin may be built here (${suite})`));
    },
  });
}

async function errorOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(EnvironmentError);
    return (err as Error).message;
  }
  throw new Error('expected an EnvironmentError');
}

afterEach(() => expect(twinsAsked.splice(0)).toEqual([]));

it('a Python no Debian suite has: the error names the ask and every Python tried', async () => {
  expect(await errorOf(resolve({ 'pyproject.toml': '[project]\nrequires-python = "==3.12.*"\n' }))).toMatch(
    /^python: pyproject\.toml requires-python asks for "==3\.12\.\*", but no Python that can be had here satisfies it: tried Debian bookworm's 3\.11\.\d+ \(the default image\) and Debian trixie's 3\.13 \(its twin agent-sandbox-trixie\); give an environment image with that Python/,
  );
  expect(await errorOf(resolve({}, { toolchains: { python: '3.14' } }))).toMatch(
    /^python: input asks for "==3\.14\.\*", but no Python/,
  );
});

it('a JDK newer than any suite has: the error names every JDK tried', async () => {
  const pom = '<project><properties><maven.compiler.release>26</maven.compiler.release></properties></project>';
  expect(await errorOf(resolve({ 'services/a/pom.xml': pom }))).toBe(
    "java: services/a/pom.xml asks for Java 26, but no JDK that can be had here is that new: tried Debian bookworm's openjdk-17 (the default image) and Debian trixie's openjdk-21, openjdk-25 (its twin agent-sandbox-trixie); give an environment image with that JDK (environment.image or a devcontainer.json)",
  );
});

it("a Rust channel or version Debian's rustc-web is not: named", async () => {
  expect(await errorOf(resolve({ 'Cargo.toml': '[package]\n', 'rust-toolchain': 'nightly\n' }))).toMatch(
    /^rust: rust-toolchain channel asks for the nightly channel, but the only Rust that can be had is Debian's rustc-web 1\.96 \(stable, bookworm-security\)/,
  );
  expect(await errorOf(resolve({ 'Cargo.toml': '[package]\nrust-version = "1.99"\n' }))).toMatch(
    /^rust: Cargo\.toml rust-version asks for Rust 1\.99, but the only Rust/,
  );
});

it('Rust on the default image: bookworm-security added, then rustc-web; an older pinned Rust is built by it', async () => {
  const resolved = await resolve({
    'Cargo.toml': '[package]\n',
    'rust-toolchain.toml': '[toolchain]\nchannel = "1.80"\n',
  });
  expect(resolved.recipe!.base).toBe(sandboxImage);
  expect(resolved.recipe!.steps.map((s) => s.title)).toEqual([
    'apt source bookworm-security',
    'apt-get install rustc-web cargo-web rustfmt-web rust-web-clippy',
    'the agent user, /workspace and the dependency cache folder',
  ]);
  expect(resolved.toolchains.rust).toEqual({
    version: '1.96',
    from: 'rust-toolchain.toml channel (1.80; 1.96 builds it)',
  });
});

it('a Gradle wrapper whose distribution is not on a registry: a note naming it, the JDK still planned', async () => {
  const resolved = await resolve({
    'build.gradle': 'plugins { id "java" }\n',
    gradlew: '#!/bin/sh\n',
    'gradle/wrapper/gradle-wrapper.properties':
      'distributionUrl=https\\://services.gradle.org/distributions/gradle-8.10.2-bin.zip\n',
  });
  expect(resolved.toolchains.java).toEqual({ version: '17', from: 'build.gradle' });
  expect(resolved.notes).toEqual([
    "gradle: gradle/wrapper/gradle-wrapper.properties downloads Gradle 8.10.2 from services.gradle.org, which is not a package registry and cannot be reached from here (no registry reachable here serves Gradle's distribution: not Maven Central, npm or PyPI, and Debian's gradle is 4.4); ./gradlew will fail: give an environment image with that Gradle, or allow services.gradle.org in the task's egress",
  ]);
  const mirrored = await resolve({
    'build.gradle': 'plugins { id "java" }\n',
    gradlew: '#!/bin/sh\n',
    'gradle/wrapper/gradle-wrapper.properties':
      'distributionUrl=https\\://repo.maven.apache.org/maven2/gradle-8.10.2-bin.zip\n',
  });
  expect(mirrored.notes).toEqual([]);
});

it('package managers the npm registry or PyPI has, at the version asked; one that is not there is named', async () => {
  const resolved = await resolve({
    'package.json': '{"packageManager": "yarn@1.22.22"}',
    'pyproject.toml': '[project]\nname = "x"\n\n[tool.poetry]\nrequires-poetry = ">=2.0,<2.1"\n',
  });
  expect(resolved.toolchains.yarn).toEqual({ version: '1.22.22', from: 'package.json packageManager' });
  expect(resolved.toolchains.poetry).toMatchObject({
    version: expect.stringMatching(/^2\.0\.\d+$/),
    from: 'pyproject.toml tool.poetry.requires-poetry',
  });
  expect(await errorOf(resolve({ 'package.json': '{"packageManager": "pnpm@0.0.1"}' }))).toMatch(
    /^pnpm: pnpm@0\.0\.1 could not be fetched from the npm registry/,
  );
});
