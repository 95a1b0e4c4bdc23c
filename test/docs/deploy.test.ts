/**
 * The production layout under `deploy/` stays true to the code: each systemd unit starts a worker
 * role `agent worker` has, from an environment file whose example is beside it; every variable of
 * an example is one that worker declares (`workers/settings.ts`), and the example passes the
 * worker's own start-up check; a hands host's file holds no model key.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RuntimeSettings } from '../../common/env-settings';
import { PROJECT_ROOT } from '../../platform/paths';
import { BRAIN_WORKER_RUNTIME, HANDS_WORKER_RUNTIME, workerSettings } from '../../workers/settings';

const DIR = path.join(PROJECT_ROOT, 'deploy', 'systemd');
const RUNTIMES: Record<'brain' | 'hands', RuntimeSettings> = {
  brain: BRAIN_WORKER_RUNTIME,
  hands: HANDS_WORKER_RUNTIME,
};

/** `KEY=value` lines of an environment file (comments and blank lines skipped). */
function readEnvFile(file: string): Record<string, string> {
  const entries = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() && !line.trimStart().startsWith('#'))
    .map((line) => {
      const at = line.indexOf('=');
      if (at <= 0) throw new Error(`${path.basename(file)}: not KEY=value: ${line}`);
      return [line.slice(0, at), line.slice(at + 1)] as const;
    });
  return Object.fromEntries(entries);
}

const declared = (runtime: RuntimeSettings): Set<string> =>
  new Set(
    runtime.parts.flatMap((part) => [
      ...part.variables.map((variable) => variable.name),
      ...(part.documented ?? []).map((documented) => documented.name),
    ]),
  );

describe('deploy/: the production layout', () => {
  const units = fs.readdirSync(DIR).filter((file) => file.endsWith('.service'));

  it('has a unit for each kind of worker, and one per release for a brain worker of a Worker Deployment', () => {
    expect(units.sort()).toEqual([
      'agent-brain-worker.service',
      'agent-brain-worker@.service',
      'agent-hands-worker.service',
    ]);
    const release = fs.readFileSync(path.join(DIR, 'agent-brain-worker@.service'), 'utf8');
    expect(release).toMatch(/^ExecStart=\/opt\/agent-harness\/releases\/%i\/bin\/agent worker brain$/m);
    const deployment = /^Environment=AGENT_WORKER_DEPLOYMENT=(\S+)$/m.exec(release)?.[1];
    expect(
      workerSettings('brain', { ANTHROPIC_API_KEY: 'k', AGENT_WORKER_DEPLOYMENT: deployment }).brain?.versioning,
    ).toEqual({
      deployment: 'agent-brain',
    });
  });

  it.each(units)('%s starts a worker from an environment file whose example passes its check', (unit) => {
    const text = fs.readFileSync(path.join(DIR, unit), 'utf8');
    const role = /^ExecStart=\S+\/bin\/agent worker (brain|hands)$/m.exec(text)?.[1] as 'brain' | 'hands' | undefined;
    expect(role).toBeDefined();
    const envFile = /^EnvironmentFile=(\S+)$/m.exec(text)?.[1];
    expect(envFile).toBeDefined();
    const example = path.join(DIR, `${path.basename(envFile!)}.example`);
    expect(fs.existsSync(example)).toBe(true);

    const env = readEnvFile(example);
    const known = declared(RUNTIMES[role!]);
    expect(Object.keys(env).filter((name) => !known.has(name))).toEqual([]);
    // The worker's own start-up check accepts it (the brain's with a key filled in).
    const filled = role === 'brain' ? { ...env, ANTHROPIC_API_KEY: 'sk-ant-example' } : env;
    expect(() => workerSettings(role!, filled)).not.toThrow();
    if (role === 'hands') {
      expect(Object.keys(env)).not.toContain('ANTHROPIC_API_KEY');
      expect(text).toMatch(/^Requires=docker\.service$/m);
    }
  });
});
