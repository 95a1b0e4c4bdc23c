/**
 * Reading what defines an environment, without Docker: devcontainer.json (the supported subset and
 * its errors), detection from a repository's files, Dockerfiles as recipes, version ranges, and the
 * input's `environment` field.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { environmentInputSchema } from '../../common/environment';
import { parseOperationInput } from '../../common/operation';
import { parseCodingTaskInput } from '../../common/coding-task';
import { detectRequirements } from '../../activities/environment/detect';
import { parseDevcontainer, readDevcontainer } from '../../activities/environment/devcontainer';
import { dockerfileRecipe } from '../../activities/environment/dockerfile';
import { EnvironmentError } from '../../activities/environment/errors';
import { recipeHash } from '../../activities/environment/recipe';
import { directoryFiles } from '../../activities/environment/repo-files';
import { npmRange, parseVersion, pythonSpecifier } from '../../activities/environment/versions';
import { removeRepositories, writeRepository } from '../support/repositories';

afterAll(() => removeRepositories());

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EnvironmentError);
    return (err as Error).message;
  }
  throw new Error('expected an EnvironmentError');
}

describe('devcontainer.json', () => {
  it('takes the supported subset of a JSON-with-comments file and names every other key', () => {
    const text = `// the team's container
    {
      "name": "demo",
      "build": { "dockerfile": "Dockerfile", "context": "..", "args": { "V": "1" }, "target": "dev" },
      /* lifecycle */
      "onCreateCommand": "echo one",
      "updateContentCommand": ["npm", "install", "--no-audit"],
      "postCreateCommand": { "a": "echo a", "b": ["echo", "it's b"] },
      "postStartCommand": "echo later",
      "containerEnv": { "TOOL_HOME": "\${containerWorkspaceFolder}/tools" },
      "remoteEnv": { "PATH": "\${containerEnv:PATH}:/opt/bin", "UNSET": null },
      "features": { "ghcr.io/devcontainers/features/go:1": {} },
      "forwardPorts": [3000],
    }`;
    const env = parseDevcontainer(text, '.devcontainer/devcontainer.json');
    expect(env.dockerfile).toBe('.devcontainer/Dockerfile');
    expect(env.context).toBe('');
    expect(env.buildArgs).toEqual({ V: '1' });
    expect(env.update).toEqual(['echo one', 'npm install --no-audit', 'echo a', `echo 'it'\\''s b'`]);
    expect(env.env).toEqual({ TOOL_HOME: '/workspace/tools', PATH: '${containerEnv:PATH}:/opt/bin' });
    expect(env.unsupported.sort()).toEqual(['build.target', 'features', 'forwardPorts', 'postStartCommand']);
  });

  it('says where a file is not JSON, and which field has the wrong type', () => {
    expect(errorOf(() => parseDevcontainer('{\n  "image": "x",\n  oops\n}', 'd.json'))).toMatch(
      /^d\.json: not valid JSON with comments: .* at line 3, column 3$/,
    );
    expect(errorOf(() => parseDevcontainer('{"image": 42}', 'd.json'))).toMatch(/^d\.json: image: expected a string/);
    expect(errorOf(() => parseDevcontainer('{"postCreateCommand": 3}', 'd.json'))).toMatch(
      /postCreateCommand: must be a command/,
    );
    expect(errorOf(() => parseDevcontainer('[1]', 'd.json'))).toBe('d.json: must be a JSON object');
    expect(errorOf(() => parseDevcontainer('{"image": "a", "build": {"dockerfile": "D"}}', 'd.json'))).toMatch(
      /not both/,
    );
  });

  it("refuses the host's environment and paths outside the repository", () => {
    expect(errorOf(() => parseDevcontainer('{"containerEnv": {"T": "${localEnv:HOME}"}}', 'd.json'))).toMatch(
      /containerEnv\.T: \$\{localEnv:HOME\} is not supported/,
    );
    expect(errorOf(() => parseDevcontainer('{"build": {"dockerfile": "../../x"}}', '.devcontainer/d.json'))).toMatch(
      /build\.dockerfile: "\.\.\/\.\.\/x" is outside the repository/,
    );
  });

  it('is found in .devcontainer/ or at the root', () => {
    expect(readDevcontainer(directoryFiles(writeRepository({ '.devcontainer.json': '{"image": "x"}' })))?.image).toBe(
      'x',
    );
    expect(readDevcontainer(directoryFiles(writeRepository({ 'a.txt': '' })))).toBeUndefined();
  });
});

describe('detection', () => {
  it('finds every toolchain of a polyglot repository and the versions its files ask for', () => {
    const found = detectRequirements(
      directoryFiles(
        writeRepository({
          'pyproject.toml': '[project]\nname = "x"\nrequires-python = ">=3.9"\n',
          'go.mod': 'module example.com/x\n\ngo 1.22\n\ntoolchain go1.22.5\n',
          'package.json': '{"engines": {"node": ">=20 <23"}}',
          'pom.xml': '<project><properties><maven.compiler.release>11</maven.compiler.release></properties></project>',
        }),
      ),
    );
    expect(found.python).toEqual({ specifier: '>=3.9', from: 'pyproject.toml requires-python' });
    expect(found.go).toEqual({ version: '1.22.5', from: 'go.mod toolchain line' });
    expect(found.node).toEqual({
      ranges: [{ range: '>=20 <23', from: 'package.json engines.node' }],
      from: 'package.json engines.node',
    });
    expect(found.java).toEqual({ release: '11', build: 'maven', wrapper: false, from: 'pom.xml' });
    expect(found.files).toEqual(['pyproject.toml', 'go.mod', 'package.json', 'pom.xml']);
  });

  it('reads .nvmrc before engines, requirements files, Gradle and Java 8 spellings', () => {
    const found = detectRequirements(
      directoryFiles(
        writeRepository({
          'requirements-dev.txt': 'pytest\n',
          'package.json': '{"engines": {"node": ">=18"}}',
          '.nvmrc': 'lts/iron\n',
          'build.gradle': 'java { sourceCompatibility = JavaVersion.VERSION_1_8 }',
          gradlew: '#!/bin/sh',
        }),
      ),
    );
    expect(found.python).toEqual({ from: 'requirements-dev.txt' });
    expect(found.node).toEqual({ ranges: [{ range: '20', from: '.nvmrc' }], from: '.nvmrc' });
    expect(found.java).toEqual({ release: '8', build: 'gradle', wrapper: true, from: 'build.gradle' });
  });

  it("walks a monorepo: toolchains from files below the root, each file's ask, vendored and generated folders skipped", () => {
    const found = detectRequirements(
      directoryFiles(
        writeRepository({
          'README.md': '# two services',
          'services/api/go.mod': 'module example.com/api\n\ngo 1.22\n',
          'services/worker/go.mod': 'module example.com/worker\n\ngo 1.23\n',
          'web/package.json': '{"engines": {"node": ">=20"}}',
          'web/.nvmrc': '22\n',
          'tools/lint/pyproject.toml': '[project]\nname = "lint"\nrequires-python = ">=3.10"\n',
          'node_modules/left-pad/package.json': '{"engines": {"node": "0.8"}}',
          'vendor/example.com/x/go.mod': 'module example.com/x\n\ngo 1.30\n',
          'web/dist/package.json': '{"engines": {"node": "4"}}',
          'services/api/testdata/go.mod': 'module example.com/broken\n\ngo 1.99\n',
          '.venv/lib/pyproject.toml': '[project]\nrequires-python = ">=3.99"\n',
          'a/b/c/d/package.json': '{"engines": {"node": "4"}}',
        }),
      ),
    );
    expect(found.go).toEqual({ version: '1.23', from: 'services/worker/go.mod go line' });
    expect(found.node).toEqual({ ranges: [{ range: '22', from: 'web/.nvmrc' }], from: 'web/.nvmrc' });
    expect(found.python).toEqual({ specifier: '>=3.10', from: 'tools/lint/pyproject.toml requires-python' });
    expect(found.files).toEqual([
      'tools/lint/pyproject.toml',
      'services/api/go.mod',
      'services/worker/go.mod',
      'web/package.json',
      'web/.nvmrc',
    ]);
    expect(found.asks).toEqual([
      { file: 'tools/lint/pyproject.toml', wants: 'python >=3.10' },
      { file: 'services/api/go.mod', wants: 'go 1.22' },
      { file: 'services/worker/go.mod', wants: 'go 1.23' },
      { file: 'web/.nvmrc', wants: 'node 22' },
    ]);
  });

  it('unites the asks of several files: Python specifiers and Node ranges must all hold, Java is the highest', () => {
    const found = detectRequirements(
      directoryFiles(
        writeRepository({
          'pyproject.toml': '[project]\nrequires-python = ">=3.9"\n',
          'py/b/setup.cfg': '[options]\npython_requires = <3.13\n',
          'package.json': '{"engines": {"node": ">=18"}}',
          'app/package.json': '{"engines": {"node": "<25"}}',
          'pom.xml': '<project><properties><maven.compiler.release>11</maven.compiler.release></properties></project>',
          'svc/pom.xml':
            '<project><properties><maven.compiler.release>21</maven.compiler.release></properties></project>',
        }),
      ),
    );
    expect(found.python).toEqual({
      specifier: '>=3.9,<3.13',
      from: 'pyproject.toml requires-python and py/b/setup.cfg python_requires',
    });
    expect(found.node!.ranges.map((r) => r.range)).toEqual(['>=18', '<25']);
    expect(found.java).toEqual({ release: '21', build: 'maven', wrapper: false, from: 'pom.xml' });
  });

  it("finds Rust: rust-version, edition 2024, a toolchain file's channel", () => {
    const rust = (files: Record<string, string>) => detectRequirements(directoryFiles(writeRepository(files))).rust;
    expect(rust({ 'Cargo.toml': '[package]\nname = "x"\nedition = "2021"\nrust-version = "1.74"\n' })).toEqual({
      version: '1.74',
      from: 'Cargo.toml rust-version',
    });
    expect(rust({ 'Cargo.toml': '[package]\nname = "x"\nedition = "2024"\n' })).toEqual({
      version: '1.85',
      from: 'Cargo.toml edition 2024',
    });
    expect(
      rust({
        'Cargo.toml': '[workspace]\n',
        'rust-toolchain.toml': '[toolchain]\nchannel = "1.80.1"\ncomponents = ["clippy"]\n',
      }),
    ).toEqual({ version: '1.80.1', pinned: true, from: 'rust-toolchain.toml channel' });
    expect(rust({ 'Cargo.toml': '[package]\n', 'rust-toolchain': 'nightly-2026-01-01\n' })).toEqual({
      channel: 'nightly-2026-01-01',
      from: 'rust-toolchain channel',
    });
    expect(
      rust({ 'crates/a/Cargo.toml': '[package]\n', 'rust-toolchain.toml': '[toolchain]\nchannel = "stable"\n' }),
    ).toEqual({ from: 'rust-toolchain.toml channel' });
  });

  it('finds the package managers: packageManager, lock files, build backends and tool sections', () => {
    const found = (files: Record<string, string>) => detectRequirements(directoryFiles(writeRepository(files)));
    expect(found({ 'package.json': '{"packageManager": "pnpm@9.12.0+sha512.abc"}' }).nodeTools).toEqual([
      { name: 'pnpm', version: '9.12.0', kind: 'exact', from: 'package.json packageManager' },
    ]);
    expect(found({ 'package.json': '{}', 'pnpm-lock.yaml': "lockfileVersion: '9.0'\n" }).nodeTools).toEqual([
      { name: 'pnpm', version: '10', kind: 'npm-range', from: 'pnpm-lock.yaml' },
    ]);
    expect(found({ 'package.json': '{}', 'yarn.lock': '__metadata:\n  version: 8\n' }).nodeTools).toEqual([
      { name: 'yarn', version: '4', kind: 'npm-range', from: 'yarn.lock' },
    ]);
    expect(found({ 'package.json': '{}', 'yarn.lock': '# yarn lockfile v1\n' }).nodeTools).toEqual([
      { name: 'yarn', version: '1', kind: 'npm-range', from: 'yarn.lock' },
    ]);
    expect(found({ 'package.json': '{"packageManager": "bun@1.1.0"}' }).unavailable).toEqual([
      'bun@1.1.0 (package.json packageManager): only npm, pnpm and yarn can be had',
    ]);
    const python = found({
      'pyproject.toml':
        '[build-system]\nbuild-backend = "hatchling.build"\n\n[project]\nname = "x"\n\n[tool.uv]\nrequired-version = ">=0.5"\n',
      'uv.lock': 'version = 1\n',
      'lib/pyproject.toml': '[build-system]\nbuild-backend = "pdm.backend"\n',
      'app/pyproject.toml': '[tool.poetry]\nname = "app"\n',
      'app/poetry.lock': '# This file is automatically @generated by Poetry 1.8.3 and should not be changed by hand.\n',
    });
    expect(python.pythonTools).toEqual([
      { name: 'uv', version: '>=0.5', kind: 'pep440', from: 'pyproject.toml tool.uv.required-version' },
      { name: 'hatch', from: 'pyproject.toml' },
      { name: 'poetry', version: '==1.*', kind: 'pep440', from: 'app/poetry.lock' },
      { name: 'pdm', from: 'lib/pyproject.toml' },
    ]);
  });

  it("reads a Gradle wrapper's distribution", () => {
    const found = detectRequirements(
      directoryFiles(
        writeRepository({
          'build.gradle.kts': 'java { toolchain { languageVersion = JavaLanguageVersion.of(17) } }',
          gradlew: '#!/bin/sh',
          'gradle/wrapper/gradle-wrapper.properties':
            'distributionBase=GRADLE_USER_HOME\ndistributionUrl=https\\://services.gradle.org/distributions/gradle-8.10.2-bin.zip\n',
        }),
      ),
    );
    expect(found.gradleWrapper).toEqual({
      version: '8.10.2',
      url: 'https://services.gradle.org/distributions/gradle-8.10.2-bin.zip',
      from: 'gradle/wrapper/gradle-wrapper.properties',
    });
  });

  it('finds nothing in a repository without toolchain files', () => {
    expect(detectRequirements(directoryFiles(writeRepository({ 'README.md': '# x' })))).toEqual({ files: [] });
  });
});

describe('Dockerfiles as recipes', () => {
  it('turns the supported instructions into steps and reports the ignored ones', () => {
    const dir = writeRepository({
      'tool.sh': 'echo hi\n',
      'conf/a.txt': 'a',
      'conf/b.txt': 'b',
      '.dockerignore': 'conf/b.txt\n',
    });
    const { recipe, notes } = dockerfileRecipe({
      file: 'Dockerfile',
      contextDir: dir,
      buildArgs: { PKG: 'jq' },
      text: [
        '# syntax=docker/dockerfile:1',
        'ARG BASE=agent-sandbox',
        'FROM ${BASE}',
        'ARG PKG=curl',
        'ENV TOOLS=/opt/tools PATH=/opt/tools/bin:$PATH',
        'RUN apt-get update \\',
        '    # a comment inside',
        ' && apt-get install -y $PKG',
        'COPY --chown=agent tool.sh /opt/tools/bin/',
        'COPY conf /etc/demo/',
        'WORKDIR /opt/tools',
        'USER agent',
        'RUN ["echo", "exec form"]',
        'CMD ["bash"]',
      ].join('\n'),
    });
    expect(recipe.base).toBe('agent-sandbox');
    expect(recipe.steps.map((s) => s.kind)).toEqual(['env', 'run', 'files', 'files', 'workdir', 'user', 'run']);
    expect(recipe.steps[0]).toMatchObject({ set: { TOOLS: '/opt/tools', PATH: '/opt/tools/bin:${PATH}' } });
    expect(recipe.steps[1]).toMatchObject({
      argv: ['/bin/sh', '-c', 'apt-get update \n && apt-get install -y $PKG'],
      user: 'root',
      env: { BASE: 'agent-sandbox', PKG: 'jq' },
    });
    expect(recipe.steps[6]).toMatchObject({ argv: ['echo', 'exec form'], user: 'agent', workdir: '/opt/tools' });
    expect(notes).toEqual(['Dockerfile line 14: CMD is ignored (the harness starts its own process)']);
  });

  it('refuses what it cannot build the same way Docker would, naming the line', () => {
    const build = (text: string) => () =>
      dockerfileRecipe({ file: 'Dockerfile', contextDir: writeRepository({ a: '' }), buildArgs: {}, text });
    expect(errorOf(build('FROM a AS x\nFROM b'))).toBe(
      'Dockerfile line 2: FROM a second time: multi-stage builds are not supported',
    );
    expect(errorOf(build('FROM a\nRUN --mount=type=cache,target=/x true'))).toMatch(
      /line 2: RUN --mount=type=cache,target=\/x is not supported/,
    );
    expect(errorOf(build('FROM a\nCOPY --from=x /a /b'))).toMatch(/line 2: COPY --from=x is not supported/);
    expect(errorOf(build('FROM a\nADD https://x/y /y'))).toMatch(/of a URL/);
    expect(errorOf(build('FROM a\nCOPY missing /m'))).toMatch(/source missing does not exist/);
    expect(errorOf(build('FROM a\nCOPY ../x /m'))).toMatch(/outside the build context/);
    expect(errorOf(build('RUN true'))).toMatch(/line 1: RUN comes before FROM/);
    expect(errorOf(build('FROM a\nONBUILD RUN x'))).toMatch(/ONBUILD is not supported/);
  });

  it('hashes the content of copied files, not only their names', () => {
    const dir = writeRepository({ 'a.txt': 'one' });
    const recipe = () =>
      dockerfileRecipe({ file: 'D', contextDir: dir, buildArgs: {}, text: 'FROM b\nCOPY a.txt /a' }).recipe;
    const first = recipeHash(recipe(), 'sha256:base');
    expect(recipeHash(recipe(), 'sha256:base')).toBe(first);
    fs.writeFileSync(path.join(dir, 'a.txt'), 'two');
    expect(recipeHash(recipe(), 'sha256:base')).not.toBe(first);
    expect(recipeHash(recipe(), 'sha256:other-base')).not.toBe(recipeHash(recipe(), 'sha256:base'));
  });
});

describe('version ranges', () => {
  const v = (text: string) => parseVersion(text)!;
  it("reads npm's ranges as engines.node writes them", () => {
    const cases: Array<[string, string, boolean]> = [
      ['>=18', '22.1.0', true],
      ['>=18', '16.20.0', false],
      ['^20.3.0', '20.9.0', true],
      ['^20.3.0', '21.0.0', false],
      ['18.x || 20.x', '20.1.0', true],
      ['18.x || 20.x', '22.0.0', false],
      ['>=18 <21', '20.99.0', true],
      ['>=18 <21', '21.0.0', false],
      ['~22.1', '22.1.9', true],
      ['~22.1', '22.2.0', false],
      ['22', '22.11.0', true],
      ['20.1.0 - 22', '22.5.0', true],
      ['*', '4.0.0', true],
    ];
    for (const [range, version, expected] of cases)
      expect([range, version, npmRange(range)!(v(version))]).toEqual([range, version, expected]);
    expect(npmRange('>=18.0.0-beta')).toBeUndefined();
  });

  it("reads Python's version specifiers", () => {
    expect(pythonSpecifier('>=3.9,<4')!(v('3.11.2'))).toBe(true);
    expect(pythonSpecifier('>=3.12')!(v('3.11.2'))).toBe(false);
    expect(pythonSpecifier('~=3.10')!(v('3.11.2'))).toBe(true);
    expect(pythonSpecifier('!=3.11.*')!(v('3.11.2'))).toBe(false);
    expect(pythonSpecifier('==3.11.*')!(v('3.11.2'))).toBe(true);
    expect(pythonSpecifier('>=3.8; extra')).toBeUndefined();
  });
});

describe('the input field', () => {
  it('is validated with the operation and coding-task inputs, naming the field', () => {
    expect(environmentInputSchema.safeParse('default').success).toBe(true);
    const op = parseOperationInput({ goal: 'x', environment: { image: 'a', dockerfile: 'D' } });
    expect(op.ok ? '' : op.error).toMatch(/environment\.dockerfile: give one of image or dockerfile, not both/);
    const bad = parseOperationInput({ goal: 'x', environment: { toolchains: { node: 'latest' } } });
    expect(bad.ok ? '' : bad.error).toMatch(/environment\.toolchains\.node: must be a version such as 22/);
    const task = parseCodingTaskInput({ repo: { kind: 'local', path: '/r' }, environment: { setup: [''] } });
    expect(task.ok ? '' : task.error).toMatch(/environment\.setup\.0: must be a non-empty shell command/);
    const unknown = parseCodingTaskInput({ repo: { kind: 'local', path: '/r' }, environment: { features: {} } });
    expect(unknown.ok ? '' : unknown.error).toMatch(/environment/);
  });
});
