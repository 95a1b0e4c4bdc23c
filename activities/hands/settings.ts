/**
 * The hands worker's sandbox settings from the environment — the directories a local seed source may
 * lie in, the workspace disk quota, the sandboxes' resource limits and the executor — declared as
 * settings (`common/env-settings.ts`; the configuration page is generated from them). Every problem
 * names the variable.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { onOff, parsed, readPart, settingsPart, variable, type Environment } from '../../common/env-settings';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from './sandbox-spec';
import { parseAllowedRoots } from './seed-source';
import { parseQuotaSize, parseSize, type WorkspaceQuota } from './workspace-quota';

export const HANDS_ENV = {
  allowedRoots: 'AGENT_ALLOWED_ROOTS',
  quota: 'AGENT_WORKSPACE_QUOTA',
  imageDir: 'AGENT_WORKSPACE_IMAGE_DIR',
  pids: 'AGENT_SANDBOX_PIDS',
  memory: 'AGENT_SANDBOX_MEMORY',
  cpus: 'AGENT_SANDBOX_CPUS',
  executor: 'AGENT_SANDBOX_EXECUTOR',
} as const;

export const DEFAULT_WORKSPACE_QUOTA = '10G';

/** The project's example repositories (what the demo seeds from). */
export const EXAMPLES_DIR = path.resolve(__dirname, '..', '..', 'examples');

/** A local seed source may lie in these without `AGENT_ALLOWED_ROOTS`: the worker user's home and `examples/`. */
export function defaultRoots(): string[] {
  return [os.homedir(), EXAMPLES_DIR];
}

export const ALLOWED_ROOTS = variable(
  HANDS_ENV.allowedRoots,
  {
    description:
      "the directories a local `repo` (an operation's seed source, a coding task's repository or `file://` remote) may lie in",
    default: "the worker user's home and the project's `examples/`",
    values: '`:`-separated absolute paths',
  },
  parsed(parseAllowedRoots, defaultRoots),
);

export interface HandsSettings {
  allowedRoots: string[];
  /** Null: workspaces get no disk quota (`AGENT_WORKSPACE_QUOTA=off`). */
  quota: WorkspaceQuota | null;
  limits: SandboxLimits;
  /** Commands run through the sandbox's executor (else a `docker exec` each). */
  executor: boolean;
}

function atLeast(min: number, integer: boolean, fallback: number) {
  return parsed(
    (text) => {
      const value = Number(text);
      if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value)))
        throw new Error(`${JSON.stringify(text)} is not ${integer ? 'a whole number' : 'a number'} of at least ${min}`);
      return value;
    },
    () => fallback,
  );
}

/** The sandbox settings; `defaults.imageDir` is where workspace images go without `AGENT_WORKSPACE_IMAGE_DIR`. */
export function handsPart(defaults: { imageDir: string }) {
  return settingsPart({
    title: 'Sandboxes',
    intro:
      'What a local repository may be seeded from, and the limits of each sandbox the hands worker makes (`activities/hands/`; the README\'s "Limits" table says what a call that hits one is told).',
    variables: {
      allowedRoots: ALLOWED_ROOTS,
      sizeBytes: variable(
        HANDS_ENV.quota,
        {
          description:
            'the disk quota of each new workspace: an ext4 image on a loop device (root only; elsewhere the worker warns and makes plain volumes)',
          default: `\`${DEFAULT_WORKSPACE_QUOTA}\``,
          values: 'a size (`10G`, `512M`, at least 64M) or `off`',
        },
        parsed(parseQuotaSize, () => parseQuotaSize(DEFAULT_WORKSPACE_QUOTA)),
      ),
      imageDir: variable(
        HANDS_ENV.imageDir,
        {
          description: 'where the hands host keeps the workspace file-system images',
          default: '`<AGENT_DATA_DIR>/workspaces`',
          values: 'an absolute path',
        },
        parsed(
          (text) => {
            if (!path.isAbsolute(text)) throw new Error(`${JSON.stringify(text)} is not an absolute path`);
            return text;
          },
          () => defaults.imageDir,
        ),
      ),
      pids: variable(
        HANDS_ENV.pids,
        {
          description: 'the processes and threads a sandbox may run at once (new containers)',
          default: `\`${DEFAULT_SANDBOX_LIMITS.pids}\``,
          values: 'a whole number of at least 16',
        },
        atLeast(16, true, DEFAULT_SANDBOX_LIMITS.pids),
      ),
      memoryBytes: variable(
        HANDS_ENV.memory,
        {
          description: 'the memory of a sandbox, without swap (new containers)',
          default: '`4G`',
          values: 'a size (`8G`, `512M`), at least 64M',
        },
        parsed(
          (text) => parseSize(text, 64 * 1024 ** 2),
          () => DEFAULT_SANDBOX_LIMITS.memoryBytes,
        ),
      ),
      cpus: variable(
        HANDS_ENV.cpus,
        {
          description: 'the CPU cores of a sandbox (new containers)',
          default: `\`${DEFAULT_SANDBOX_LIMITS.cpus}\``,
          values: 'a number of at least 0.1 (fractions allowed)',
        },
        atLeast(0.1, false, DEFAULT_SANDBOX_LIMITS.cpus),
      ),
      executor: variable(
        HANDS_ENV.executor,
        {
          description:
            '`on`: tool commands run through a persistent executor process per sandbox; `off`: a `docker exec` each (the README\'s "Crash safety" says what each keeps)',
          default: '`on`',
          values: '`on`, `off`',
        },
        onOff(true, { caseInsensitive: true }),
      ),
    },
    build: (v): HandsSettings => ({
      allowedRoots: v.allowedRoots,
      quota: v.sizeBytes === null ? null : { sizeBytes: v.sizeBytes, imageDir: v.imageDir },
      limits: { pids: v.pids, memoryBytes: v.memoryBytes, cpus: v.cpus },
      executor: v.executor,
    }),
  });
}

/** Reads the hands settings; throws one Error listing every problem, each naming its variable. */
export function readHandsSettings(env: Environment, defaults: { imageDir: string }): HandsSettings {
  return readPart('hands', handsPart(defaults), env);
}
