/**
 * The hands worker's hook settings: whether a repository may bring its own hooks
 * (`.agent/hooks.json`, `AGENT_REPOSITORY_HOOKS`), and the host hooks it defines by name
 * (`AGENT_HOST_HOOKS`, a JSON file checked at start). Every problem names the variable and, for the
 * file, the field.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { onOff, parsed, readPart, settingsPart, variable, type Environment } from '../../common/env-settings';
import { hostHooksFileSchema, type HostHooks } from '../../common/hooks';
import { describeZodError } from '../../common/validation';

export const HOOKS_ENV = {
  repositoryHooks: 'AGENT_REPOSITORY_HOOKS',
  hostHooks: 'AGENT_HOST_HOOKS',
} as const;

export interface HookHostSettings {
  /** A repository's `.agent/hooks.json` applies to the operations and coding tasks that work on it. */
  repositoryHooks: boolean;
  /** The host hooks an input may name (`{"type": "host", "name": …}`); none without `AGENT_HOST_HOOKS`. */
  hostHooks: HostHooks;
  /** Where they came from, for messages. */
  hostHooksFile?: string;
}

export const NO_HOOK_HOST_SETTINGS: HookHostSettings = { repositoryHooks: false, hostHooks: {} };

export const HOOKS_PART = settingsPart({
  title: 'Hooks',
  intro:
    "What hooks the hands worker allows beyond those of the inputs ([Hooks](hooks.md); `activities/hooks/`): the repository's own, and host hooks it defines.",
  problem: (name, message) => `${name} ${message}`,
  variables: {
    repositoryHooks: variable(
      HOOKS_ENV.repositoryHooks,
      {
        description:
          "`on`: a repository's `.agent/hooks.json` (read from the repository an operation or coding task names, not from the workspace) adds its hooks to the input's",
        default: '`off`',
        values: '`on`, `off`',
      },
      onOff(false, { caseInsensitive: true }),
    ),
    hostHooks: variable(
      HOOKS_ENV.hostHooks,
      {
        description:
          'a JSON file `{"<name>": {"command", "timeout"?, "replay"?, "env"?}}` of host hooks, run on this host (never in the sandbox) when an input names one (`{"type": "host", "name": …}`); checked at start',
        default: 'none',
        values: 'an absolute path to a readable JSON file',
      },
      parsed<{ file: string; hooks: HostHooks } | undefined>(
        (file) => ({ file, hooks: readHostHooksFile(file) }),
        () => undefined,
      ),
    ),
  },
  build: ({ repositoryHooks, hostHooks }): HookHostSettings => ({
    repositoryHooks,
    hostHooks: hostHooks?.hooks ?? {},
    ...(hostHooks ? { hostHooksFile: hostHooks.file } : {}),
  }),
});

export function readHookHostSettings(env: Environment): HookHostSettings {
  return readPart('hooks', HOOKS_PART, env);
}

function readHostHooksFile(file: string): HostHooks {
  if (!path.isAbsolute(file)) throw new Error(`${JSON.stringify(file)} is not an absolute path`);
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`);
  }
  const checked = hostHooksFileSchema.safeParse(raw);
  if (!checked.success) throw new Error(`${file}: ${describeZodError(checked.error, raw)}`);
  return checked.data;
}
