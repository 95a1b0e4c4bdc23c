/**
 * The flags that describe a coding task — `agent task start`'s, and `agent schedule create`'s after
 * `--` — and the task they describe. Pure; the command table (`commands.ts`) declares the commands.
 */
import type { EgressPolicy } from '../common/egress';
import type { EnvironmentInput } from '../common/environment';
import type { HooksInput } from '../common/hooks';
import {
  dollars,
  egressValue,
  environmentValue,
  hooksValue,
  positiveDuration,
  positiveInt,
  textValue,
  type FlagValues,
  type ValueFlag,
} from './command-line';
import { UsageError } from './usage-error';

/** The task as the command line describes it; the command turns it into a `CodingTaskInput`. */
export interface TaskSpecArgs {
  repo: { kind: 'local'; path: string } | { kind: 'git'; url: string; ref?: string };
  branch?: string;
  spec?: string;
  specPath?: string;
  verify?: string;
  verifyTimeoutMs?: number;
  model?: string;
  /** `--egress` (default for tasks: `registries`). */
  egress?: EgressPolicy;
  /** `--environment` (default: the repository's devcontainer.json, else detection). */
  environment?: EnvironmentInput;
  /** `--hooks '<json>'|<file>` (docs/hooks.md). */
  hooks?: HooksInput;
  budget: {
    featuresPerRun?: number;
    maxTurnsPerFeature?: number;
    maxAttemptsPerFeature?: number;
    maxTotalTokens?: number;
    maxCostUsd?: number;
    maxDurationMs?: number;
    onExceeded?: 'ask';
  };
}

/** Schedule names: they become schedule ids and part of workflow ids and branch names. */
export const SCHEDULE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/** By default a catch-up window of one hour: a run missed by less (server down at 1 am) still happens. */
export const DEFAULT_CATCHUP_WINDOW_MS = 3_600_000;

const text = (value: string, help: string): ValueFlag<string> => ({ value, help, schema: textValue });
const count = (help: string): ValueFlag<number> => ({ value: 'N', help, schema: positiveInt() });

export const TASK_FLAGS = {
  repo: text(
    '<path>',
    "a local git repository (inside the hands worker's allowed roots); the run pushes its branch into it",
  ),
  git: text('<url>', 'a git remote the hands worker can reach with its own credentials (`file://` works)'),
  ref: text('<ref>', 'what to start from in the --git remote (default: its HEAD)'),
  branch: text('<branch>', 'the branch the task works on (default agent/<task id>, or agent/<schedule name>)'),
  spec: text('"…"', 'the specification, inline (needed only when the branch has no feature list)'),
  'spec-path': text('<file>', 'the specification, a file in the repository'),
  verify: text('"<command>"', 'the regression command the harness runs before accepting a feature'),
  'verify-timeout': { value: '10m', help: 'the time each verify command may take', schema: positiveDuration },
  model: text('<name>', 'the model of every operation'),
  egress: {
    value: "registries|none|<host,…>|'{json}'",
    help: 'what the sandbox may reach (default registries, so init.sh can install dependencies)',
    schema: egressValue,
  },
  environment: {
    value: "default|'{json}'",
    help: "what the sandbox runs in (default: the repository's devcontainer.json, else detected; docs/environments.md)",
    schema: environmentValue,
  },
  hooks: {
    value: "'{json}'|<file>",
    help: 'hooks every operation of the task runs (docs/hooks.md), e.g. a Stop hook that runs the checks',
    schema: hooksValue,
  },
  'features-per-run': count('features this run may complete'),
  'max-turns-per-feature': count('model turns per feature attempt (default 50)'),
  'max-attempts-per-feature': count('attempts before a feature is skipped for the run (default 3)'),
  'max-tokens': count('tokens the run may use'),
  'max-cost': { value: 'USD', help: 'dollars the run may spend (`1.50`, `$1.50`)', schema: dollars },
  'max-duration': { value: '8h', help: 'wall time of the run', schema: positiveDuration },
  'ask-over-budget': {
    help: 'a spent token, cost or time budget waits for agent approve <task> budget-<n> to extend it instead of ending the run',
  },
} as const;

/** The task the flags describe; throws a UsageError for flags that do not go together. */
export function taskSpecOf(flags: FlagValues<typeof TASK_FLAGS>): TaskSpecArgs {
  if (flags.repo !== undefined && flags.git !== undefined)
    throw new UsageError('give --repo <path> or --git <url>, not both');
  if (flags.ref !== undefined && flags.git === undefined)
    throw new UsageError('--ref needs --git (a local repository starts from its checked-out branch)');
  if (flags.spec !== undefined && flags['spec-path'] !== undefined)
    throw new UsageError('give --spec or --spec-path, not both');
  let repo: TaskSpecArgs['repo'];
  if (flags.git !== undefined)
    repo = { kind: 'git', url: flags.git, ...(flags.ref !== undefined ? { ref: flags.ref } : {}) };
  else if (flags.repo !== undefined) repo = { kind: 'local', path: flags.repo };
  else throw new UsageError('missing the repository: --repo <path> or --git <url>');
  const budget: TaskSpecArgs['budget'] = {
    ...(flags['features-per-run'] !== undefined ? { featuresPerRun: flags['features-per-run'] } : {}),
    ...(flags['max-turns-per-feature'] !== undefined ? { maxTurnsPerFeature: flags['max-turns-per-feature'] } : {}),
    ...(flags['max-attempts-per-feature'] !== undefined
      ? { maxAttemptsPerFeature: flags['max-attempts-per-feature'] }
      : {}),
    ...(flags['max-tokens'] !== undefined ? { maxTotalTokens: flags['max-tokens'] } : {}),
    ...(flags['max-cost'] !== undefined ? { maxCostUsd: flags['max-cost'] } : {}),
    ...(flags['max-duration'] !== undefined ? { maxDurationMs: flags['max-duration'] } : {}),
    ...(flags['ask-over-budget'] ? { onExceeded: 'ask' as const } : {}),
  };
  return {
    repo,
    ...(flags.branch !== undefined ? { branch: flags.branch } : {}),
    ...(flags.spec !== undefined ? { spec: flags.spec } : {}),
    ...(flags['spec-path'] !== undefined ? { specPath: flags['spec-path'] } : {}),
    ...(flags.verify !== undefined ? { verify: flags.verify } : {}),
    ...(flags['verify-timeout'] !== undefined ? { verifyTimeoutMs: flags['verify-timeout'] } : {}),
    ...(flags.model !== undefined ? { model: flags.model } : {}),
    ...(flags.egress !== undefined ? { egress: flags.egress } : {}),
    ...(flags.environment !== undefined ? { environment: flags.environment } : {}),
    ...(flags.hooks !== undefined ? { hooks: flags.hooks } : {}),
    budget,
  };
}

/** A schedule's name, checked. */
export function scheduleName(name: string): string {
  if (!SCHEDULE_NAME_PATTERN.test(name))
    throw new UsageError(
      `the name "${name}" must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  return name;
}

/** A cron expression of 5 to 7 fields, or `@daily` and the like. */
export function cronOf(cron: string | undefined): string {
  if (!cron) throw new UsageError('--cron is required, e.g. --cron "0 1 * * *"');
  if (!/^@\w+|^(\S+\s+){4,6}\S+$/.test(cron.trim()))
    throw new UsageError(`--cron must have 5 to 7 fields or be like @daily, got "${cron}"`);
  return cron.trim();
}
