/**
 * Builds the sandbox tools (`sandbox-tools/`, Go, standard library only): the one static binary the
 * hands mount read-only into every sandbox container — the executor, the egress forwarder and the file
 * tools' helpers (`activities/hands/executor/sandbox-tools.ts`) — so that nothing of the harness's own
 * machinery needs python3 or node in the image.
 *
 * Built with the machine's `go` (1.21 or newer; offline: no module is downloaded) for linux on this
 * machine's architecture, `CGO_ENABLED=0`, and kept at `<data dir>/sandbox-tools/<hash>/agent-sandbox-tools`,
 * the hash being of the Go source and the build recipe: it is rebuilt only when the source changes.
 * `npm test`, `npm run demo` and `npm run sandbox:build` build it with the sandbox image; a hands
 * worker builds it at start when it is missing.
 */
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DATA_DIR, PROJECT_ROOT } from './paths';
import { childEnvironment, goEnvironment } from './settings';
import { PlatformError } from './temporal-cli';

export const SANDBOX_TOOLS_SOURCE = path.join(PROJECT_ROOT, 'sandbox-tools');
const BINARY = 'agent-sandbox-tools';
const MIN_GO = { major: 1, minor: 21 };
const BUILD_FLAGS = ['-trimpath', '-buildvcs=false', '-ldflags=-s -w -buildid='];
const GO_ARCH: Partial<Record<NodeJS.Architecture, string>> = { x64: 'amd64', arm64: 'arm64' };
/** How long one build may take (a first build compiles the standard library's packages it uses). */
const BUILD_TIMEOUT_MS = 10 * 60_000;

export interface SandboxToolsBuild {
  /** The binary on this host. */
  path: string;
  /** True when this call built it. */
  built: boolean;
  seconds: number;
}

function goArch(): string {
  const arch = GO_ARCH[process.arch];
  if (!arch) throw new PlatformError(`the sandbox tools are built for amd64 or arm64 hosts, not ${process.arch}`);
  return arch;
}

/** The binary for the current source (it may not be built yet). */
export function sandboxToolsPath(): string {
  const files = fs
    .readdirSync(SANDBOX_TOOLS_SOURCE)
    .filter((name) => name === 'go.mod' || (name.endsWith('.go') && !name.endsWith('_test.go')))
    .sort();
  const hash = createHash('sha256')
    .update(['linux', goArch(), ...BUILD_FLAGS].join(' '))
    .update('\0');
  for (const name of files) {
    hash
      .update(name)
      .update('\0')
      .update(fs.readFileSync(path.join(SANDBOX_TOOLS_SOURCE, name)))
      .update('\0');
  }
  return path.join(DATA_DIR, 'sandbox-tools', hash.digest('hex').slice(0, 12), BINARY);
}

/**
 * The binary for the current source, built first when it is missing. Throws a `PlatformError`
 * naming what to install when there is no usable `go`, and with go's output when the build fails.
 */
export function ensureSandboxTools(log: (line: string) => void = () => undefined): SandboxToolsBuild {
  const target = sandboxToolsPath();
  if (fs.existsSync(target)) return { path: target, built: false, seconds: 0 };
  const started = Date.now();
  const go = findGo();
  log(`building the sandbox tools (${path.relative(PROJECT_ROOT, SANDBOX_TOOLS_SOURCE)}/, ${go.version})`);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  // Built beside the target and renamed into place: a concurrent build, or a container mounting
  // the binary, never sees half a file.
  const partial = `${target}.${process.pid}-${randomBytes(4).toString('hex')}.partial`;
  const result = spawnSync(go.path, ['build', ...BUILD_FLAGS, '-o', partial, '.'], {
    cwd: SANDBOX_TOOLS_SOURCE,
    env: buildEnv(),
    encoding: 'utf8',
    timeout: BUILD_TIMEOUT_MS,
  });
  if (result.status !== 0) {
    fs.rmSync(partial, { force: true });
    const why = result.error ? result.error.message : `${result.stderr}${result.stdout}`.trim().slice(-2000);
    throw new PlatformError(`building the sandbox tools failed (go build in ${SANDBOX_TOOLS_SOURCE}):\n${why}`);
  }
  fs.chmodSync(partial, 0o755);
  fs.renameSync(partial, target);
  return { path: target, built: true, seconds: (Date.now() - started) / 1000 };
}

function buildEnv(): NodeJS.ProcessEnv {
  // The installed toolchain, no module download, no workspace or flags of the caller's own; go keeps
  // its build cache under $HOME, and a service account without one gets one in the data dir.
  return goEnvironment(
    {
      CGO_ENABLED: '0',
      GOOS: 'linux',
      GOARCH: goArch(),
      GOTOOLCHAIN: 'local',
      GOPROXY: 'off',
      GOWORK: 'off',
      GOFLAGS: '',
    },
    path.join(DATA_DIR, 'go-build-cache'),
  );
}

/** `go` on PATH, or where the official installer puts it: the first that is 1.21 or newer. */
function findGo(): { path: string; version: string } {
  const install = `install Go ${MIN_GO.major}.${MIN_GO.minor} or newer (https://go.dev/dl/) and put \`go\` on PATH`;
  const tooOld: string[] = [];
  for (const candidate of ['go', '/usr/local/go/bin/go']) {
    const probe = spawnSync(candidate, ['env', 'GOVERSION'], {
      encoding: 'utf8',
      env: childEnvironment({ GOTOOLCHAIN: 'local' }),
    });
    if (probe.error || probe.status !== 0) continue;
    const version = probe.stdout.trim();
    const match = /^go(\d+)\.(\d+)/.exec(version);
    const [major, minor] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
    if (major > MIN_GO.major || (major === MIN_GO.major && minor >= MIN_GO.minor)) return { path: candidate, version };
    tooOld.push(`${candidate} is ${version || 'of an unknown version'}`);
  }
  throw new PlatformError(
    tooOld.length
      ? `the sandbox tools need Go ${MIN_GO.major}.${MIN_GO.minor} or newer to build (${tooOld.join(', ')}): ${install}`
      : `the sandbox tools are built from Go source and no \`go\` was found: ${install}`,
  );
}
