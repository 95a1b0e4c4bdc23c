/** The machine a bench run ran on, for the report: CPU, memory, OS and the versions of the parts. */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import type Docker from 'dockerode';
import type { BenchResults } from './results';

export type MachineDescription = BenchResults['machine'];

export async function describeMachine(docker: Docker, temporalCli: string): Promise<MachineDescription> {
  const docker_ = await docker.version().then(
    (version) => `${version.Version} (API ${version.ApiVersion}, ${version.Os}/${version.Arch})`,
    (err: Error) => `unknown (${err.message})`,
  );
  let temporal: string;
  try {
    temporal = execFileSync(temporalCli, ['--version'], { encoding: 'utf8' }).trim();
  } catch (err) {
    temporal = `unknown (${(err as Error).message})`;
  }
  return {
    cpuModel: cpuModel(),
    cores: os.cpus().length,
    memoryGb: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}${debianVersion()}`,
    node: process.version,
    docker: docker_,
    temporal,
    loadAverage: { start: loadAverage(), end: loadAverage() },
  };
}

export const loadAverage = (): number => Math.round(os.loadavg()[0]! * 100) / 100;

function cpuModel(): string {
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
    if (match) return match[1]!.trim();
  } catch {
    // not Linux
  }
  return os.cpus()[0]?.model ?? 'unknown';
}

function debianVersion(): string {
  try {
    return ` (Debian ${fs.readFileSync('/etc/debian_version', 'utf8').trim()})`;
  } catch {
    return '';
  }
}
