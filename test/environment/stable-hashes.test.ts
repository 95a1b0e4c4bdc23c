/**
 * Repositories the environments supported before the wave-4 toolchains keep exactly the same
 * environment: the same recipe (so the same image hash on the same base, and their images are
 * reused, not rebuilt) on the same base (the default image). The recipes are resolved for real
 * (the default image probed on the real engine, Node and Go looked up on their registries through
 * the host's npm and go) and hashed over a fixed base id, so the pins hold on every host; the pinned
 * values were computed on main before the change (7f65170).
 *
 * Inputs whose resolution floats with the registries (an `engines.node` range or `.nvmrc`, whose npm is the newest of its
 * major; a `go` line without a patch version) are left out on purpose: their hashes change when a new release appears, whatever
 * the code does.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import Docker from 'dockerode';
import { EnvironmentBuilder } from '../../activities/environment/builder';
import { recipeHash } from '../../activities/environment/recipe';
import { directoryFiles } from '../../activities/environment/repo-files';
import { resolveEnvironment } from '../../activities/environment/resolve';
import { DEFAULT_SANDBOX_LIMITS } from '../../activities/hands/sandbox-spec';
import type { EnvironmentInput } from '../../common/environment';
import { testPlatform } from '../support/env';
import { removeRepositories, writeRepository } from '../support/repositories';

jest.setTimeout(600_000);

const BASE_ID = 'sha256:pinned-base';
const { sandboxImage, sandboxTools } = testPlatform();
const builder = new EnvironmentBuilder({
  docker: new Docker(),
  limits: DEFAULT_SANDBOX_LIMITS,
  namePrefix: 'stable-hashes-',
  sandboxTools,
});

afterAll(() => removeRepositories());

async function hashOf(files: Record<string, string>, input?: EnvironmentInput): Promise<string> {
  const resolved = await resolveEnvironment({
    files: directoryFiles(writeRepository(files)),
    ...(input ? { input } : {}),
    defaultImage: sandboxImage,
    probe: (image) => builder.probe(image),
    host: { env: process.env, cacheDir: path.join(os.tmpdir(), 'agent-env-test-toolchains') },
  });
  if (!resolved.recipe) return 'the default image';
  expect(resolved.recipe.base).toBe(sandboxImage);
  return recipeHash(resolved.recipe, BASE_ID).slice(0, 16);
}

const POM = '<project><properties><maven.compiler.release>11</maven.compiler.release></properties></project>';

const CASES: Array<[string, Record<string, string>, EnvironmentInput | undefined, string]> = [
  [
    'setup.py and setup.cfg (six)',
    { 'setup.py': 'from setuptools import setup\nsetup()\n', 'setup.cfg': '[metadata]\nname = x\n' },
    undefined,
    '95cf6a64bef9a58c',
  ],
  [
    'pyproject.toml with setuptools and requires-python',
    {
      'pyproject.toml':
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n[project]\nname = "x"\nrequires-python = ">=3.9"\n',
    },
    undefined,
    '95cf6a64bef9a58c',
  ],
  ['requirements.txt', { 'requirements.txt': 'requests\n' }, undefined, '95cf6a64bef9a58c'],
  [
    'go.mod with a toolchain line',
    { 'go.mod': 'module example.com/x\n\ngo 1.22\n\ntoolchain go1.22.5\n' },
    undefined,
    '8ed24d5a5ba25efe',
  ],
  [
    'package.json without engines',
    { 'package.json': '{"name": "x", "scripts": {"test": "node --test"}}' },
    undefined,
    'the default image',
  ],
  ['pom.xml (Java 11, Maven)', { 'pom.xml': POM }, undefined, '0d5a690cc096c6f9'],
  [
    'build.gradle without a wrapper',
    { 'build.gradle': 'java { sourceCompatibility = JavaVersion.VERSION_17 }\n' },
    undefined,
    '6a5501412374e6df',
  ],
  [
    'a polyglot root: pyproject, go.mod, pom.xml',
    {
      'pyproject.toml': '[project]\nname = "x"\nrequires-python = ">=3.9"\n',
      'go.mod': 'module example.com/x\n\ngo 1.22\n\ntoolchain go1.22.5\n',
      'pom.xml': POM,
    },
    undefined,
    '03b230dd501f86dc',
  ],
  [
    'a devcontainer.json with a Dockerfile FROM agent-sandbox',
    {
      '.devcontainer/devcontainer.json': '{"build": {"dockerfile": "Dockerfile"}, "postCreateCommand": "true"}',
      '.devcontainer/Dockerfile': 'FROM agent-sandbox\nRUN echo hello > /etc/hello\n',
    },
    undefined,
    'c83cce82d52ec730',
  ],
  [
    'the input: setup commands and toolchains',
    { 'README.md': '' },
    { setup: ['echo x > /etc/x'], toolchains: { python: '3.11', java: '17' } },
    '5b405430e16b9cd5',
  ],
];

it.each(CASES)('%s: the same environment as before', async (_name, files, input, pinned) => {
  expect(await hashOf(files, input)).toBe(pinned);
});
