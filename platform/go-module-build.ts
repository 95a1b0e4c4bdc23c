/**
 * Building a program from a Go module that `go install` refuses (its go.mod has replace
 * directives, or names another module path): the module is downloaded through the Go module proxy,
 * copied somewhere writable and built there with the machine's Go. Jaeger and Gitea are built so.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { DATA_DIR } from './paths';
import { goEnvironment } from './settings';
import { PlatformError } from './temporal-cli';

const run = promisify(execFile);

export interface ModuleBuild {
  /** `github.com/jaegertracing/jaeger`. */
  module: string;
  version: string;
  /** What is built, for messages (`Jaeger`). */
  name: string;
  /** `go build`'s arguments after `-o <binary>` (e.g. `['./cmd/jaeger']`). */
  buildArgs: string[];
  /** `go build`'s flags before `-o` (e.g. `-trimpath`, `-ldflags …`). */
  buildFlags?: string[];
  /** Extra environment of the go commands (`CGO_ENABLED`, `GOTOOLCHAIN`). */
  env?: Record<string, string>;
  /** Where the binary goes (written under another name, then renamed: never half there). */
  binary: string;
  /** Runs on the module's copy after the build and before it is removed (copying assets out). */
  afterBuild?: (source: string) => void;
}

/** Builds `build.binary` from a copy of the downloaded module (minutes on a cold Go cache). */
export async function buildFromModuleCopy(build: ModuleBuild): Promise<void> {
  const env = goEnvironment({ GOWORK: 'off', ...build.env }, path.join(DATA_DIR, 'go-build-cache'));
  const go = async (args: string[], cwd?: string) => {
    try {
      // In the copy, go.sum may gain the lines its replace directives need.
      const flags = cwd ? { GOFLAGS: '-mod=mod -buildvcs=false' } : {};
      return (await run('go', args, { env: { ...env, ...flags }, cwd, maxBuffer: 64 * 1024 * 1024 })).stdout.trim();
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stderr?: string };
      if (e.code === 'ENOENT')
        throw new PlatformError(`the Go toolchain (\`go\`) is not on PATH: install Go to build ${build.name}`);
      throw new PlatformError(`go ${args.join(' ')} failed: ${(e.stderr ?? e.message).trim().slice(-2000)}`);
    }
  };
  const at = `${build.module}@v${build.version}`;
  const downloaded = JSON.parse(await go(['mod', 'download', '-json', at])) as { Dir?: string };
  if (!downloaded.Dir) throw new PlatformError(`go mod download gave no directory for ${at}`);
  const source = fs.mkdtempSync(path.join(os.tmpdir(), `${path.basename(build.binary)}-${build.version}-`));
  try {
    fs.cpSync(downloaded.Dir, source, { recursive: true });
    // The module cache is read-only; the copy is built in, so it must be writable.
    await run('chmod', ['-R', 'u+w', source]);
    fs.mkdirSync(path.dirname(build.binary), { recursive: true });
    const building = `${build.binary}.building-${process.pid}`;
    await go(['build', ...(build.buildFlags ?? []), '-o', building, ...build.buildArgs], source);
    build.afterBuild?.(source);
    fs.renameSync(building, build.binary);
  } finally {
    fs.rmSync(source, { recursive: true, force: true });
  }
}
