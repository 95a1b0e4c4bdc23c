/**
 * Helpers of the bad-input matrix (test/bad-input/): running the real `temporal` and `agent`
 * commands against the test platform, and checking that a refused input left nothing behind.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { main } from '../../cli/agent';
import { dockerClient } from '../../platform/docker-engine';
import { PROJECT_ROOT } from '../../platform/paths';
import { SANDBOX_LABELS } from '../../common/sandbox-names';
import { testPlatform } from './env';

const execFileAsync = promisify(execFile);

export interface CommandOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command and returns its exit code and output (never throws for a non-zero exit). */
export async function runCommand(
  file: string,
  args: string[],
  env: Record<string, string | undefined> = process.env,
): Promise<CommandOutcome> {
  try {
    const { stdout, stderr } = await execFileAsync(file, args, { env, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number | string; stdout?: string; stderr?: string };
    return {
      code: typeof failed.code === 'number' ? failed.code : -1,
      stdout: failed.stdout ?? '',
      stderr: failed.stderr ?? String(err),
    };
  }
}

/** `temporal <args>` against the test server. */
export function temporalCli(args: string[]): Promise<CommandOutcome> {
  const { temporalCli: cli, temporalAddress, namespace } = testPlatform();
  return runCommand(cli, [...args, '--address', temporalAddress, '--namespace', namespace]);
}

/** `bin/agent <args>` against the test server. */
export function agentCli(args: string[], env: Record<string, string> = {}): Promise<CommandOutcome> {
  const { temporalAddress, namespace } = testPlatform();
  return runCommand(path.join(PROJECT_ROOT, 'bin', 'agent'), args, {
    ...process.env,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_NAMESPACE: namespace,
    ...env,
  });
}

/** Containers and volumes the harness made for a session (none, after a refused input). */
export async function sandboxResourcesOf(sessionId: string): Promise<string[]> {
  const docker = dockerClient();
  const filters = { label: [`${SANDBOX_LABELS.sandbox}=${sessionId}`] };
  const containers = await docker.listContainers({ all: true, filters });
  const volumes = (await docker.listVolumes({ filters })).Volumes ?? [];
  return [...containers.map((c) => c.Names[0] ?? c.Id), ...volumes.map((v) => v.Name)];
}

/**
 * The CLI's `main` in this process, as `runMain` runs it for `bin/agent` (an error thrown is printed
 * as one `error:` line with exit code 1). The Temporal connection comes from the environment: set
 * `TEMPORAL_ADDRESS` to the test server first (`useTestServerEnv`).
 */
export async function agentInProcess(argv: string[]): Promise<CommandOutcome> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const log = jest.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void stdout.push(args.join(' ')));
  const error = jest
    .spyOn(console, 'error')
    .mockImplementation((...args: unknown[]) => void stderr.push(args.join(' ')));
  try {
    const code = await main(argv);
    return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
  } catch (err) {
    return { code: 1, stdout: stdout.join('\n'), stderr: [...stderr, `error: ${(err as Error).message}`].join('\n') };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

/** Points this process's Temporal settings at the test server; returns a function that undoes it. */
export function useTestServerEnv(): () => void {
  const saved = { TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE: process.env.TEMPORAL_NAMESPACE };
  process.env.TEMPORAL_ADDRESS = testPlatform().temporalAddress;
  process.env.TEMPORAL_NAMESPACE = testPlatform().namespace;
  return () => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
}
