/**
 * Detection: what toolchains a repository needs, read from its own files when neither the input
 * nor a devcontainer.json says. Several at once for polyglot repositories. Only the repository's
 * root is looked at (where these files live by convention); versions are what the files ask for,
 * resolved to exact versions later (`toolchains.ts`).
 *
 * | files | toolchain | version from |
 * |---|---|---|
 * | `pyproject.toml`, `setup.py`, `setup.cfg`, `requirements*.txt`, `Pipfile` | Python with pip and venv | `requires-python` / `python_requires` (checked) |
 * | `go.mod` | Go | its `toolchain` line, else its `go` line |
 * | `package.json` | Node.js | `.nvmrc` / `.node-version`, else `engines.node`; default: the image's (current LTS) |
 * | `pom.xml`, `build.gradle`, `build.gradle.kts` | a JDK with Maven (or Gradle) | `maven.compiler.release` / `source`, `java.version`, Gradle's language version |
 */
import { EnvironmentError } from './errors';
import type { RepoFiles } from './repo-files';

export interface Requirements {
  python?: { specifier?: string; from: string };
  /** `range` in npm's syntax; absent: any version (the image's own when it has one). */
  node?: { range?: string; from: string };
  /** `version` as written (`1.22.5`, `1.22`); absent: the newest release. */
  go?: { version?: string; from: string };
  java?: { release?: string; build: 'maven' | 'gradle'; wrapper: boolean; from: string };
  /** The files that decided it. */
  files: string[];
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

export function detectRequirements(files: RepoFiles): Requirements {
  const found: Requirements = { files: [] };
  detectPython(files, found);
  detectGo(files, found);
  detectNode(files, found);
  detectJava(files, found);
  return found;
}

function detectPython(files: RepoFiles, found: Requirements): void {
  const markers = ['pyproject.toml', 'setup.py', 'setup.cfg', 'Pipfile', ...files.list(/^requirements.*\.txt$/)].filter(
    (name) => files.exists(name),
  );
  if (!markers.length) return;
  found.files.push(...markers);
  const pyproject = files.read('pyproject.toml') ?? '';
  const fromPyproject = /^\s*requires-python\s*=\s*["']([^"']+)["']/m.exec(pyproject)?.[1];
  const fromSetupCfg = /^\s*python_requires\s*=\s*(.+)$/m.exec(files.read('setup.cfg') ?? '')?.[1]?.trim();
  const fromSetupPy = /python_requires\s*=\s*["']([^"']+)["']/.exec(files.read('setup.py') ?? '')?.[1];
  const specifier = fromPyproject ?? fromSetupCfg ?? fromSetupPy;
  found.python = specifier
    ? {
        specifier,
        from: fromPyproject
          ? 'pyproject.toml requires-python'
          : fromSetupCfg
            ? 'setup.cfg python_requires'
            : 'setup.py python_requires',
      }
    : { from: markers[0]! };
}

function detectGo(files: RepoFiles, found: Requirements): void {
  const gomod = files.read('go.mod');
  if (gomod === undefined) return;
  found.files.push('go.mod');
  const toolchain = /^\s*toolchain\s+go(\d+(?:\.\d+){1,2})\s*$/m.exec(gomod)?.[1];
  const go = /^\s*go\s+(\d+(?:\.\d+){1,2})\s*$/m.exec(gomod)?.[1];
  found.go = toolchain
    ? { version: toolchain, from: 'go.mod toolchain line' }
    : go
      ? { version: go, from: 'go.mod go line' }
      : { from: 'go.mod (no go line)' };
}

function detectNode(files: RepoFiles, found: Requirements): void {
  const manifest = files.read('package.json');
  if (manifest === undefined) return;
  found.files.push('package.json');
  for (const name of ['.nvmrc', '.node-version']) {
    const text = files.read(name)?.trim();
    if (!text) continue;
    found.files.push(name);
    found.node = { range: nvmrcRange(text, name), from: name };
    return;
  }
  let engines: unknown;
  try {
    engines = (JSON.parse(manifest) as { engines?: { node?: unknown } }).engines?.node;
  } catch {
    engines = undefined; // a broken package.json is the project's problem, not the environment's
  }
  found.node =
    typeof engines === 'string' && engines.trim()
      ? { range: engines.trim(), from: 'package.json engines.node' }
      : { from: 'package.json' };
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
  const pom = files.read('pom.xml');
  const gradleFile = ['build.gradle', 'build.gradle.kts'].find((name) => files.exists(name));
  if (pom === undefined && !gradleFile) return;
  if (pom !== undefined) {
    found.files.push('pom.xml');
    const release =
      tag(pom, 'maven.compiler.release') ??
      tag(pom, 'release') ??
      tag(pom, 'maven.compiler.source') ??
      tag(pom, 'java.version') ??
      tag(pom, 'source');
    found.java = {
      ...(release ? { release: javaMajor(release) } : {}),
      build: 'maven',
      wrapper: files.exists('mvnw'),
      from: 'pom.xml',
    };
    return;
  }
  found.files.push(gradleFile!);
  const text = files.read(gradleFile!) ?? '';
  const release =
    /JavaLanguageVersion\.of\(\s*(\d+)\s*\)/.exec(text)?.[1] ??
    /JavaVersion\.VERSION_(\d+(?:_\d+)?)/.exec(text)?.[1]?.replace('_', '.') ??
    /sourceCompatibility\s*=\s*['"]?(\d+(?:\.\d+)?)/.exec(text)?.[1];
  found.java = {
    ...(release ? { release: javaMajor(release) } : {}),
    build: 'gradle',
    wrapper: files.exists('gradlew'),
    from: gradleFile!,
  };
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
