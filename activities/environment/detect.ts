/**
 * Detection: what toolchains and package managers a repository needs, read from its own files when
 * neither the input nor a devcontainer.json says. The tree is walked (`RepoFiles.find`: at most
 * three folders down, not into vendored, generated or hidden folders), so a monorepo with
 * `services/api/go.mod` and `web/package.json` gets both; what every file asks for is united into
 * one environment, and each file's ask is kept for the report. Versions are what the files ask for,
 * resolved to exact versions later (`toolchains.ts`).
 *
 * | files | toolchain | version from |
 * |---|---|---|
 * | `pyproject.toml`, `setup.py`, `setup.cfg`, `requirements*.txt`, `Pipfile` | Python with pip and venv | `requires-python` / `python_requires` (all must hold) |
 * | `go.mod`, `go.work` | Go | its `toolchain` line, else its `go` line (the newest asked) |
 * | `package.json` | Node.js | `.nvmrc` / `.node-version` beside it, else `engines.node` (all must hold); default: the image's (current LTS) |
 * | `pom.xml`, `build.gradle`, `build.gradle.kts` | a JDK with Maven (or Gradle) | `maven.compiler.release` / `source`, `java.version`, Gradle's language version (the highest asked) |
 * | `Cargo.toml`, `rust-toolchain.toml`, `rust-toolchain` | Rust with cargo | the toolchain file's `channel`, `rust-version`, edition 2024 (the highest asked) |
 *
 * Package managers: `packageManager` (`pnpm@9.12.0`, `yarn@4.5.0`), `pnpm-lock.yaml`,
 * `pnpm-workspace.yaml`, `yarn.lock`; `uv.lock` / `[tool.uv]` / `uv_build`, `poetry.lock` /
 * `[tool.poetry]` / `poetry.core`, `pdm.lock` / `[tool.pdm]` / `pdm.backend`, `hatch.toml` /
 * `[tool.hatch.envs]` / `hatchling`; a Gradle wrapper's `distributionUrl`.
 */
import { EnvironmentError } from './errors';
import type { RepoFiles } from './repo-files';
import { compareVersions, parseVersion } from './versions';

export type NodeToolName = 'pnpm' | 'yarn';
export type PythonToolName = 'uv' | 'poetry' | 'pdm' | 'hatch';

/** A package manager a repository asks for: an exact version, a range, or any (the newest). */
export interface ToolAsk<Name extends string> {
  name: Name;
  /** An exact version (`packageManager`'s) or a range (npm's syntax for Node tools, PEP 440 for Python tools). */
  version?: string;
  /** How `version` reads: exact, an npm range, a PEP 440 specifier. */
  kind?: 'exact' | 'npm-range' | 'pep440';
  from: string;
}

/** One file's ask, for the report (`services/api/go.mod` → `go 1.22`). */
export interface Ask {
  file: string;
  wants: string;
}

export interface Requirements {
  python?: { specifier?: string; from: string };
  /** Every range must hold (`range` in npm's syntax); none: any version (the image's own when it has one). */
  node?: { ranges: Array<{ range: string; from: string }>; from: string };
  /** `version` as written (`1.22.5`, `1.22`); absent: the newest release. */
  go?: { version?: string; from: string };
  java?: { release?: string; build: 'maven' | 'gradle'; wrapper: boolean; from: string };
  /**
   * `version`: the lowest Rust that builds it (`1.85`: a `rust-version`, an edition), or the one a
   * toolchain file pins (`pinned`); `channel`: a named channel other than stable (`nightly`, `beta`).
   */
  rust?: { version?: string; pinned?: boolean; channel?: string; from: string };
  nodeTools?: Array<ToolAsk<NodeToolName>>;
  pythonTools?: Array<ToolAsk<PythonToolName>>;
  /** A Gradle wrapper's distribution (`gradle/wrapper/gradle-wrapper.properties`). */
  gradleWrapper?: { version?: string; url: string; from: string };
  /** What the files ask for that no toolchain here gives, by name (`bun@1.1.0 (packageManager)`). */
  unavailable?: string[];
  /** The files that decided it. */
  files: string[];
  /** What each file asked for. */
  asks?: Ask[];
}

/** Node's LTS code names (`.nvmrc`'s `lts/<name>`). */
const NODE_LTS_NAMES: Record<string, number> = {
  argon: 4,
  boron: 6,
  carbon: 8,
  dubnium: 10,
  erbium: 12,
  fermium: 14,
  gallium: 16,
  hydrogen: 18,
  iron: 20,
  jod: 22,
  krypton: 24,
};

/** Rust edition → the first Rust that builds it. */
const RUST_EDITIONS: Record<string, string> = { '2015': '1.0', '2018': '1.31', '2021': '1.56', '2024': '1.85' };

export function detectRequirements(files: RepoFiles): Requirements {
  const found: Requirements = { files: [], asks: [] };
  detectPython(files, found);
  detectGo(files, found);
  detectNode(files, found);
  detectJava(files, found);
  detectRust(files, found);
  detectPythonTools(files, found);
  if (!found.asks!.length) delete found.asks;
  return found;
}

/** `dir/name`, or `name` at the root. */
const inFolder = (dir: string, name: string): string => (dir ? `${dir}/${name}` : name);
const folderOf = (file: string): string => file.split('/').slice(0, -1).join('/');
/** A field's origin as reports show it: `pyproject.toml requires-python`, `web/package.json engines.node`. */
const origin = (dir: string, what: string): string => (dir ? `${dir}/${what}` : what);

/** The folders holding any of `names`, root first (`''` is the root). */
function foldersWith(files: RepoFiles, pattern: RegExp): string[] {
  const folders: string[] = [];
  for (const file of files.find(pattern)) {
    const dir = folderOf(file);
    if (!folders.includes(dir)) folders.push(dir);
  }
  return folders;
}

function ask(found: Requirements, file: string, wants: string): void {
  found.asks!.push({ file, wants });
}

function detectPython(files: RepoFiles, found: Requirements): void {
  const specifiers: Array<{ specifier: string; from: string }> = [];
  let firstMarker: string | undefined;
  for (const dir of foldersWith(files, /^(pyproject\.toml|setup\.py|setup\.cfg|Pipfile|requirements.*\.txt)$/)) {
    const here = (name: string) => inFolder(dir, name);
    const markers = [
      'pyproject.toml',
      'setup.py',
      'setup.cfg',
      'Pipfile',
      ...listIn(files, dir, /^requirements.*\.txt$/),
    ].filter((name) => files.exists(here(name)));
    if (!markers.length) continue;
    found.files.push(...markers.map(here));
    firstMarker ??= here(markers[0]!);
    const pyproject = files.read(here('pyproject.toml')) ?? '';
    const fromPyproject = /^\s*requires-python\s*=\s*["']([^"']+)["']/m.exec(pyproject)?.[1];
    const fromSetupCfg = /^\s*python_requires\s*=\s*(.+)$/m.exec(files.read(here('setup.cfg')) ?? '')?.[1]?.trim();
    const fromSetupPy = /python_requires\s*=\s*["']([^"']+)["']/.exec(files.read(here('setup.py')) ?? '')?.[1];
    const specifier = fromPyproject ?? fromSetupCfg ?? fromSetupPy;
    const file = here(
      fromPyproject ? 'pyproject.toml' : fromSetupCfg ? 'setup.cfg' : fromSetupPy ? 'setup.py' : markers[0]!,
    );
    ask(found, file, specifier ? `python ${specifier}` : 'python');
    if (specifier)
      specifiers.push({
        specifier,
        from: origin(
          dir,
          fromPyproject
            ? 'pyproject.toml requires-python'
            : fromSetupCfg
              ? 'setup.cfg python_requires'
              : 'setup.py python_requires',
        ),
      });
  }
  if (!firstMarker) return;
  found.python = specifiers.length
    ? {
        specifier: specifiers.map((s) => s.specifier).join(','),
        from: specifiers.map((s) => s.from).join(' and '),
      }
    : { from: firstMarker };
}

/** File names in `dir` matching `pattern`. */
function listIn(files: RepoFiles, dir: string, pattern: RegExp): string[] {
  return files
    .find(pattern)
    .filter((file) => folderOf(file) === dir)
    .map((file) => file.slice(dir ? dir.length + 1 : 0));
}

function detectGo(files: RepoFiles, found: Requirements): void {
  let best: { version?: string; from: string } | undefined;
  for (const file of files.find(/^go\.(mod|work)$/)) {
    const text = files.read(file);
    if (text === undefined) continue;
    found.files.push(file);
    const dir = folderOf(file);
    const name = file.slice(dir ? dir.length + 1 : 0);
    const toolchain = /^\s*toolchain\s+go(\d+(?:\.\d+){1,2})\s*$/m.exec(text)?.[1];
    const go = /^\s*go\s+(\d+(?:\.\d+){1,2})\s*$/m.exec(text)?.[1];
    const here = toolchain
      ? { version: toolchain, from: origin(dir, `${name} toolchain line`) }
      : go
        ? { version: go, from: origin(dir, `${name} go line`) }
        : { from: origin(dir, `${name} (no go line)`) };
    ask(found, file, here.version ? `go ${here.version}` : 'go');
    // One Go builds every module of the repository: the newest asked (Go keeps old code building).
    if (!best || (here.version && (!best.version || newer(here.version, best.version)))) best = here;
  }
  if (best) found.go = best;
}

function newer(a: string, b: string): boolean {
  const va = parseVersion(a);
  const vb = parseVersion(b);
  return va !== undefined && vb !== undefined && compareVersions(va, vb) > 0;
}

function detectNode(files: RepoFiles, found: Requirements): void {
  const ranges: Array<{ range: string; from: string }> = [];
  let first: string | undefined;
  const tools: Array<ToolAsk<NodeToolName>> = [];
  const addTool = (tool: ToolAsk<NodeToolName>, file: string) => {
    ask(found, file, tool.version ? `${tool.name} ${tool.version}` : tool.name);
    if (!tools.some((t) => t.name === tool.name)) tools.push(tool);
  };
  for (const file of files.find(/^package\.json$/)) {
    const manifestText = files.read(file);
    if (manifestText === undefined) continue;
    const dir = folderOf(file);
    found.files.push(file);
    first ??= file;
    let manifest: { engines?: { node?: unknown }; packageManager?: unknown } = {};
    try {
      manifest = JSON.parse(manifestText) as typeof manifest;
    } catch {
      // A broken package.json is the project's problem, not the environment's.
    }
    const versionFile = ['.nvmrc', '.node-version'].find((name) => files.read(inFolder(dir, name))?.trim());
    if (versionFile) {
      const path = inFolder(dir, versionFile);
      found.files.push(path);
      const range = nvmrcRange(files.read(path)!.trim(), path);
      ask(found, path, range ? `node ${range}` : 'node');
      if (range) ranges.push({ range, from: origin(dir, versionFile) });
    } else if (typeof manifest.engines?.node === 'string' && manifest.engines.node.trim()) {
      const range = manifest.engines.node.trim();
      ask(found, file, `node ${range}`);
      ranges.push({ range, from: origin(dir, 'package.json engines.node') });
    } else ask(found, file, 'node');
    const declared = typeof manifest.packageManager === 'string' ? manifest.packageManager.trim() : undefined;
    if (declared) {
      const [, name, version] = /^(@?[^@\s]+)@([^+\s]+)(?:\+\S*)?$/.exec(declared) ?? [];
      if (name === 'pnpm' || name === 'yarn')
        addTool({ name, version: version!, kind: 'exact', from: origin(dir, 'package.json packageManager') }, file);
      else if (name !== 'npm')
        (found.unavailable ??= []).push(
          `${declared} (${origin(dir, 'package.json packageManager')}): only npm, pnpm and yarn can be had`,
        );
    }
    lockfileTools(files, dir, found, addTool);
  }
  if (!first) return;
  found.node = { ranges, from: ranges.length ? ranges.map((r) => r.from).join(' and ') : first };
  if (tools.length) found.nodeTools = tools;
}

/** pnpm and yarn from the lock files and workspace files beside a package.json. */
function lockfileTools(
  files: RepoFiles,
  dir: string,
  found: Requirements,
  addTool: (tool: ToolAsk<NodeToolName>, file: string) => void,
): void {
  const pnpmLock = inFolder(dir, 'pnpm-lock.yaml');
  const lock = files.read(pnpmLock);
  if (lock !== undefined) {
    found.files.push(pnpmLock);
    // The lock file's format says which pnpm majors read it: 9.0 is pnpm 9 and 10, 6.x pnpm 8, 5.x pnpm 7.
    const format = /^lockfileVersion:\s*['"]?(\d+)(?:\.\d+)?/m.exec(lock)?.[1];
    const major = format === '5' ? '7' : format === '6' ? '8' : format === '9' ? '10' : undefined;
    addTool(
      {
        name: 'pnpm',
        ...(major ? { version: major, kind: 'npm-range' as const } : {}),
        from: origin(dir, 'pnpm-lock.yaml'),
      },
      pnpmLock,
    );
  }
  const workspace = inFolder(dir, 'pnpm-workspace.yaml');
  if (files.exists(workspace)) {
    found.files.push(workspace);
    addTool({ name: 'pnpm', from: origin(dir, 'pnpm-workspace.yaml') }, workspace);
  }
  const yarnLock = inFolder(dir, 'yarn.lock');
  const yarn = files.read(yarnLock);
  if (yarn !== undefined) {
    found.files.push(yarnLock);
    // Yarn 2+ (berry) writes a __metadata block; yarn 1 (classic) does not.
    const berry = /^__metadata:/m.test(yarn);
    addTool({ name: 'yarn', version: berry ? '4' : '1', kind: 'npm-range', from: origin(dir, 'yarn.lock') }, yarnLock);
  }
  for (const name of ['bun.lock', 'bun.lockb']) {
    const path = inFolder(dir, name);
    if (files.exists(path)) (found.unavailable ??= []).push(`bun (${path}): only npm, pnpm and yarn can be had`);
  }
}

/** `.nvmrc` content as an npm range: `22` → `22`, `v22.11.0` → `22.11.0`, `lts/jod` → `22`, `lts/*` / `node` → any. */
function nvmrcRange(text: string, file: string): string | undefined {
  const line = text.split('\n')[0]!.trim();
  if (line === 'node' || line === 'stable' || line === 'lts/*' || line === 'latest') return undefined;
  const lts = /^lts\/([a-z]+)$/i.exec(line);
  if (lts) {
    const major = NODE_LTS_NAMES[lts[1]!.toLowerCase()];
    if (major === undefined) throw new EnvironmentError('invalid', `${file}: unknown Node.js LTS name "${line}"`);
    return String(major);
  }
  return line.replace(/^v/, '');
}

function detectJava(files: RepoFiles, found: Requirements): void {
  let java: Requirements['java'];
  for (const file of files.find(/^(pom\.xml|build\.gradle|build\.gradle\.kts)$/)) {
    const text = files.read(file);
    if (text === undefined) continue;
    const dir = folderOf(file);
    const maven = file.endsWith('pom.xml');
    // A Maven module beside a Gradle build (or the other way round) in the same folder: the first wins there.
    if (!maven && files.exists(inFolder(dir, 'pom.xml'))) continue;
    found.files.push(file);
    const release = maven ? pomRelease(text) : gradleRelease(text);
    const wrapper = files.exists(inFolder(dir, maven ? 'mvnw' : 'gradlew'));
    ask(found, file, `java${release ? ` ${release}` : ''} (${maven ? 'maven' : 'gradle'}${wrapper ? ' wrapper' : ''})`);
    const here = {
      ...(release ? { release } : {}),
      build: maven ? ('maven' as const) : ('gradle' as const),
      wrapper,
      from: origin(dir, file.slice(dir ? dir.length + 1 : 0)),
    };
    if (!java) java = here;
    else if (release && (!java.release || Number(release) > Number(java.release))) java = { ...java, release };
    if (!maven && wrapper && !found.gradleWrapper) gradleWrapper(files, dir, found);
  }
  if (java) found.java = java;
}

function pomRelease(pom: string): string | undefined {
  const release =
    tag(pom, 'maven.compiler.release') ??
    tag(pom, 'release') ??
    tag(pom, 'maven.compiler.source') ??
    tag(pom, 'java.version') ??
    tag(pom, 'source');
  return release ? javaMajor(release) : undefined;
}

function gradleRelease(text: string): string | undefined {
  const release =
    /JavaLanguageVersion\.of\(\s*(\d+)\s*\)/.exec(text)?.[1] ??
    /JavaVersion\.VERSION_(\d+(?:_\d+)?)/.exec(text)?.[1]?.replace('_', '.') ??
    /sourceCompatibility\s*=\s*['"]?(\d+(?:\.\d+)?)/.exec(text)?.[1];
  return release ? javaMajor(release) : undefined;
}

/** The wrapper's `distributionUrl`: the Gradle it downloads and from where. */
function gradleWrapper(files: RepoFiles, dir: string, found: Requirements): void {
  const file = inFolder(dir, 'gradle/wrapper/gradle-wrapper.properties');
  const text = files.read(file);
  const url = text && /^\s*distributionUrl\s*[=:]\s*(\S+)\s*$/m.exec(text)?.[1]?.replace(/\\(.)/g, '$1');
  if (!url) return;
  found.files.push(file);
  const version = /gradle-([0-9][^/]*?)-(?:bin|all)\.zip$/.exec(url)?.[1];
  ask(found, file, `gradle${version ? ` ${version}` : ''} from ${url}`);
  found.gradleWrapper = { ...(version ? { version } : {}), url, from: file };
}

function tag(xml: string, name: string): string | undefined {
  const value = new RegExp(`<${name.replace(/\./g, '\\.')}>\\s*([^<\\s]+)\\s*</${name.replace(/\./g, '\\.')}>`).exec(
    xml,
  )?.[1];
  // `${java.version}`-style references are not resolved: the default JDK then.
  return value && !value.includes('${') ? value : undefined;
}

/** `1.8` → `8`, `17` → `17`. */
function javaMajor(release: string): string {
  return release.startsWith('1.') ? release.slice(2) : release.split('.')[0]!;
}

function detectRust(files: RepoFiles, found: Requirements): void {
  let rust: Requirements['rust'];
  const consider = (here: NonNullable<Requirements['rust']>) => {
    if (!rust) rust = here;
    else if (here.channel && !rust.channel) rust = here;
    else if (!rust.channel && here.version && (!rust.version || newer(here.version, rust.version))) rust = here;
  };
  for (const file of files.find(/^(Cargo\.toml|rust-toolchain\.toml|rust-toolchain)$/)) {
    const text = files.read(file);
    if (text === undefined) continue;
    found.files.push(file);
    const dir = folderOf(file);
    const name = file.slice(dir ? dir.length + 1 : 0);
    if (name === 'Cargo.toml') {
      const rustVersion = /^\s*rust-version\s*=\s*["'](\d+(?:\.\d+){0,2})["']/m.exec(text)?.[1];
      const edition = /^\s*edition\s*=\s*["'](\d{4})["']/m.exec(text)?.[1];
      const fromEdition = edition ? RUST_EDITIONS[edition] : undefined;
      const version =
        rustVersion && fromEdition
          ? newer(fromEdition, rustVersion)
            ? fromEdition
            : rustVersion
          : (rustVersion ?? fromEdition);
      const why = version === rustVersion ? 'rust-version' : `edition ${edition}`;
      ask(found, file, version ? `rust ${version} (${why})` : 'rust');
      consider(version ? { version, from: origin(dir, `Cargo.toml ${why}`) } : { from: file });
      continue;
    }
    // rust-toolchain.toml's [toolchain] channel, or the legacy file's one line.
    const channel =
      name === 'rust-toolchain.toml'
        ? /^\s*channel\s*=\s*["']([^"']+)["']/m.exec(text)?.[1]
        : (/^\s*channel\s*=\s*["']([^"']+)["']/m.exec(text)?.[1] ?? text.trim().split('\n')[0]?.trim());
    if (!channel) continue;
    ask(found, file, `rust ${channel}`);
    const numbered = /^(\d+\.\d+(?:\.\d+)?)$/.exec(channel)?.[1];
    const from = origin(dir, `${name} channel`);
    consider(
      numbered ? { version: numbered, pinned: true, from } : channel === 'stable' ? { from } : { channel, from },
    );
  }
  if (rust) found.rust = rust;
}

/** uv, poetry, pdm and hatch, from lock files, tool sections and build backends of pyproject.toml files. */
function detectPythonTools(files: RepoFiles, found: Requirements): void {
  if (!found.python) return;
  const tools: Array<ToolAsk<PythonToolName>> = [];
  const add = (tool: ToolAsk<PythonToolName>, file: string) => {
    ask(found, file, tool.version ? `${tool.name} ${tool.version}` : tool.name);
    if (!tools.some((t) => t.name === tool.name)) tools.push(tool);
  };
  for (const dir of foldersWith(files, /^(pyproject\.toml|uv\.lock|poetry\.lock|pdm\.lock|hatch\.toml)$/)) {
    const here = (name: string) => inFolder(dir, name);
    const pyproject = files.read(here('pyproject.toml')) ?? '';
    const backend = /^\s*build-backend\s*=\s*["']([^"']+)["']/m.exec(pyproject)?.[1] ?? '';
    const section = (name: string) => new RegExp(`^\\s*\\[tool\\.${name}(\\.[^\\]]*)?\\]`, 'm').test(pyproject);
    const setting = (tool: string, key: string) =>
      new RegExp(`\\[tool\\.${tool}\\][^\\[]*?^\\s*${key}\\s*=\\s*["']([^"']+)["']`, 'ms').exec(pyproject)?.[1];
    const lock = (name: string) => {
      const path = here(name);
      if (!files.exists(path)) return undefined;
      found.files.push(path);
      return path;
    };
    const uvLock = lock('uv.lock');
    if (uvLock || section('uv') || backend === 'uv_build') {
      const required = setting('uv', 'required-version');
      add(
        {
          name: 'uv',
          ...(required ? { version: required, kind: 'pep440' as const } : {}),
          from: required
            ? origin(dir, 'pyproject.toml tool.uv.required-version')
            : origin(dir, uvLock ? 'uv.lock' : 'pyproject.toml'),
        },
        uvLock ?? here('pyproject.toml'),
      );
    }
    const poetryLock = lock('poetry.lock');
    if (poetryLock || section('poetry') || backend.startsWith('poetry.core')) {
      const required = setting('poetry', 'requires-poetry');
      // "@generated by Poetry 1.8.3": that major reads and writes this lock file's format.
      const generator = poetryLock ? /@generated by Poetry (\d+)\./.exec(files.read(poetryLock) ?? '')?.[1] : undefined;
      add(
        {
          name: 'poetry',
          ...(required
            ? { version: required, kind: 'pep440' as const }
            : generator
              ? { version: `==${generator}.*`, kind: 'pep440' as const }
              : {}),
          from: required
            ? origin(dir, 'pyproject.toml tool.poetry.requires-poetry')
            : origin(dir, poetryLock ? 'poetry.lock' : 'pyproject.toml'),
        },
        poetryLock ?? here('pyproject.toml'),
      );
    }
    const pdmLock = lock('pdm.lock');
    if (pdmLock || section('pdm') || backend.startsWith('pdm.backend')) {
      add(
        { name: 'pdm', from: origin(dir, pdmLock ? 'pdm.lock' : 'pyproject.toml') },
        pdmLock ?? here('pyproject.toml'),
      );
    }
    const hatchToml = lock('hatch.toml');
    if (hatchToml || section('hatch\\.envs') || backend.startsWith('hatchling')) {
      add(
        { name: 'hatch', from: origin(dir, hatchToml ? 'hatch.toml' : 'pyproject.toml') },
        hatchToml ?? here('pyproject.toml'),
      );
    }
  }
  if (tools.length) found.pythonTools = tools;
}
