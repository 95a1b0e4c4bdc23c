/**
 * Parses `agent task start …` and `agent schedule …` into typed commands.
 * Pure (no I/O), so it is tested directly; every problem is one line that names the flag.
 *
 *   agent task start (--repo <path> | --git <url> [--ref <ref>]) [--branch B] [--spec "…" | --spec-path P]
 *        [--verify "cmd"] [--features-per-run N] [--max-turns-per-feature N] [--max-attempts-per-feature N]
 *        [--max-tokens N] [--max-cost USD] [--max-duration D] [--verify-timeout D] [--model M]
 *        [--id ID] [--detach] [--with-worker]
 *   agent schedule create <name> --cron "0 1 * * *" [--timezone Z] [--catchup-window D] [--no-pause-on-failure]
 *        -- <task start flags>
 *   agent schedule ls | pause <name> [--note "…"] | unpause <name> | trigger <name> | delete <name>
 */
import { parseEgressFlag, type EgressPolicy } from '../common/egress';
import { parseDuration } from '../common/duration';
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
  budget: {
    featuresPerRun?: number;
    maxTurnsPerFeature?: number;
    maxAttemptsPerFeature?: number;
    maxTotalTokens?: number;
    maxCostUsd?: number;
    maxDurationMs?: number;
  };
}

export type TaskCommand =
  | { kind: 'task-start'; task: TaskSpecArgs; id?: string; detach: boolean; withWorker: boolean }
  | {
      kind: 'schedule-create';
      name: string;
      cron: string;
      timezone?: string;
      catchupWindowMs: number;
      pauseOnFailure: boolean;
      task: TaskSpecArgs;
    }
  | { kind: 'schedule-ls' }
  | { kind: 'schedule-pause'; name: string; note?: string }
  | { kind: 'schedule-unpause'; name: string; note?: string }
  | { kind: 'schedule-trigger'; name: string }
  | { kind: 'schedule-delete'; name: string };

/** Schedule names: they become schedule ids and part of workflow ids and branch names. */
export const SCHEDULE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/** By default a catch-up window of one hour: a run missed by less (server down at 1 am) still happens. */
export const DEFAULT_CATCHUP_WINDOW_MS = 3_600_000;

type FlagKind = 'string' | 'int' | 'usd' | 'duration' | 'boolean';

const TASK_FLAGS: Record<string, FlagKind> = {
  repo: 'string',
  git: 'string',
  ref: 'string',
  branch: 'string',
  spec: 'string',
  'spec-path': 'string',
  verify: 'string',
  'verify-timeout': 'duration',
  model: 'string',
  egress: 'string',
  'features-per-run': 'int',
  'max-turns-per-feature': 'int',
  'max-attempts-per-feature': 'int',
  'max-tokens': 'int',
  'max-cost': 'usd',
  'max-duration': 'duration',
};

type FlagValues = Record<string, string | number | boolean>;

function parseFlags(
  argv: string[],
  spec: Record<string, FlagKind>,
  command: string,
): { positional: string[]; flags: FlagValues; rest?: string[] } {
  const positional: string[] = [];
  const flags: FlagValues = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') return { positional, flags, rest: argv.slice(i + 1) };
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const [name = '', inline] = arg.slice(2).split(/=(.*)/s, 2);
    const kind = spec[name];
    if (!kind) throw new UsageError(`agent ${command}: unknown flag --${name}`);
    if (kind === 'boolean') {
      if (inline !== undefined) throw new UsageError(`agent ${command}: --${name} takes no value`);
      flags[name] = true;
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined || (inline === undefined && value.startsWith('--')))
      throw new UsageError(`agent ${command}: --${name} needs a value`);
    flags[name] = flagValue(command, name, kind, value);
  }
  return { positional, flags };
}

function flagValue(command: string, name: string, kind: FlagKind, value: string): string | number {
  if (kind === 'int') {
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0)
      throw new UsageError(`agent ${command}: --${name} must be a positive whole number, got "${value}"`);
    return n;
  }
  if (kind === 'usd') {
    const n = Number(value.replace(/^\$/, ''));
    if (!Number.isFinite(n) || n <= 0)
      throw new UsageError(`agent ${command}: --${name} must be a positive amount of dollars, got "${value}"`);
    return n;
  }
  if (kind === 'duration') {
    try {
      const ms = parseDuration(value);
      if (ms <= 0) throw new Error('must be positive');
      return ms;
    } catch {
      throw new UsageError(`agent ${command}: --${name} must be a duration like 90s, 30m, 8h, got "${value}"`);
    }
  }
  if (!value.trim()) throw new UsageError(`agent ${command}: --${name} is empty`);
  return value;
}

function egressOf(text: string, command: string): EgressPolicy {
  const parsed = parseEgressFlag(text);
  if (!parsed.ok) throw new UsageError(`agent ${command}: ${parsed.error}`);
  return parsed.value;
}

/** The task flags of `task start` and of `schedule create … --`. */
export function parseTaskSpec(flags: FlagValues, command: string): TaskSpecArgs {
  const str = (name: string) => flags[name] as string | undefined;
  const num = (name: string) => flags[name] as number | undefined;
  if (str('repo') !== undefined && str('git') !== undefined)
    throw new UsageError(`agent ${command}: give --repo <path> or --git <url>, not both`);
  if (str('repo') === undefined && str('git') === undefined)
    throw new UsageError(`agent ${command}: missing the repository: --repo <path> or --git <url>`);
  if (str('ref') !== undefined && str('git') === undefined)
    throw new UsageError(`agent ${command}: --ref needs --git (a local repository starts from its checked-out branch)`);
  if (str('spec') !== undefined && str('spec-path') !== undefined)
    throw new UsageError(`agent ${command}: give --spec or --spec-path, not both`);
  const repo: TaskSpecArgs['repo'] =
    str('git') !== undefined
      ? { kind: 'git', url: str('git')!, ...(str('ref') !== undefined ? { ref: str('ref')! } : {}) }
      : { kind: 'local', path: str('repo')! };
  const budget: TaskSpecArgs['budget'] = {};
  const budgetFlags: Array<[keyof TaskSpecArgs['budget'], string]> = [
    ['featuresPerRun', 'features-per-run'],
    ['maxTurnsPerFeature', 'max-turns-per-feature'],
    ['maxAttemptsPerFeature', 'max-attempts-per-feature'],
    ['maxTotalTokens', 'max-tokens'],
    ['maxCostUsd', 'max-cost'],
    ['maxDurationMs', 'max-duration'],
  ];
  for (const [field, flag] of budgetFlags) if (num(flag) !== undefined) budget[field] = num(flag);
  return {
    repo,
    ...(str('branch') !== undefined ? { branch: str('branch') } : {}),
    ...(str('spec') !== undefined ? { spec: str('spec') } : {}),
    ...(str('spec-path') !== undefined ? { specPath: str('spec-path') } : {}),
    ...(str('verify') !== undefined ? { verify: str('verify') } : {}),
    ...(num('verify-timeout') !== undefined ? { verifyTimeoutMs: num('verify-timeout') } : {}),
    ...(str('model') !== undefined ? { model: str('model') } : {}),
    ...(str('egress') !== undefined ? { egress: egressOf(str('egress')!, command) } : {}),
    budget,
  };
}

export function parseTaskCommand(argv: string[]): TaskCommand {
  const [sub, ...rest] = argv;
  if (sub !== 'start') throw new UsageError(`agent task: expected "start", got ${sub ? `"${sub}"` : 'nothing'}`);
  const {
    positional,
    flags,
    rest: extra,
  } = parseFlags(rest, { ...TASK_FLAGS, id: 'string', detach: 'boolean', 'with-worker': 'boolean' }, 'task start');
  if (positional.length > 0 || extra)
    throw new UsageError(`agent task start: unexpected argument "${positional[0] ?? '--'}" (every option is a flag)`);
  return {
    kind: 'task-start',
    task: parseTaskSpec(flags, 'task start'),
    ...(flags.id !== undefined ? { id: flags.id as string } : {}),
    detach: flags.detach === true,
    withWorker: flags['with-worker'] === true,
  };
}

export function parseScheduleCommand(argv: string[]): TaskCommand {
  const [sub, ...rest] = argv;
  const named = (command: string, extraFlags: Record<string, FlagKind> = {}) => {
    const parsed = parseFlags(rest, extraFlags, `schedule ${command}`);
    if (parsed.positional.length !== 1 || parsed.rest)
      throw new UsageError(`agent schedule ${command}: expected one schedule name`);
    return { name: scheduleName(parsed.positional[0]!, command), flags: parsed.flags };
  };
  switch (sub) {
    case 'create':
      return parseScheduleCreate(rest);
    case 'ls':
    case 'list':
      if (rest.length) throw new UsageError(`agent schedule ls: unexpected argument "${rest[0]}"`);
      return { kind: 'schedule-ls' };
    case 'pause':
    case 'unpause': {
      const { name, flags } = named(sub, { note: 'string' });
      return {
        kind: sub === 'pause' ? 'schedule-pause' : 'schedule-unpause',
        name,
        ...(flags.note ? { note: flags.note as string } : {}),
      };
    }
    case 'trigger':
      return { kind: 'schedule-trigger', name: named(sub).name };
    case 'delete':
    case 'rm':
      return { kind: 'schedule-delete', name: named('delete').name };
    default:
      throw new UsageError(
        `agent schedule: expected create, ls, pause, unpause, trigger or delete, got ${sub ? `"${sub}"` : 'nothing'}`,
      );
  }
}

function parseScheduleCreate(argv: string[]): TaskCommand {
  const { positional, flags, rest } = parseFlags(
    argv,
    { cron: 'string', timezone: 'string', 'catchup-window': 'duration', 'no-pause-on-failure': 'boolean' },
    'schedule create',
  );
  if (positional.length !== 1)
    throw new UsageError('agent schedule create: expected one schedule name before the flags');
  const name = scheduleName(positional[0]!, 'create');
  const cron = flags.cron as string | undefined;
  if (!cron) throw new UsageError('agent schedule create: --cron is required, e.g. --cron "0 1 * * *"');
  if (!/^@\w+|^(\S+\s+){4,6}\S+$/.test(cron.trim()))
    throw new UsageError(`agent schedule create: --cron must have 5 to 7 fields or be like @daily, got "${cron}"`);
  if (!rest || rest.length === 0)
    throw new UsageError('agent schedule create: give the task after "--", e.g. -- --repo /path --spec-path SPEC.md');
  const task = parseFlags(rest, TASK_FLAGS, 'schedule create');
  if (task.positional.length > 0 || task.rest)
    throw new UsageError(`agent schedule create: unexpected argument "${task.positional[0] ?? '--'}" after "--"`);
  return {
    kind: 'schedule-create',
    name,
    cron: cron.trim(),
    ...(flags.timezone !== undefined ? { timezone: flags.timezone as string } : {}),
    catchupWindowMs: (flags['catchup-window'] as number | undefined) ?? DEFAULT_CATCHUP_WINDOW_MS,
    pauseOnFailure: flags['no-pause-on-failure'] !== true,
    task: parseTaskSpec(task.flags, 'schedule create'),
  };
}

function scheduleName(name: string, command: string): string {
  if (!SCHEDULE_NAME_PATTERN.test(name))
    throw new UsageError(
      `agent schedule ${command}: the name "${name}" must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  return name;
}

export const TASK_HELP = `  agent task start --repo <path> | --git <url> [--ref R]   start an overnight coding task and follow it
        [--branch B] [--spec "…" | --spec-path P] [--verify "npm test"] [--features-per-run N]
        [--max-turns-per-feature N] [--max-attempts-per-feature N] [--max-tokens N] [--max-cost USD]
        [--max-duration 8h] [--verify-timeout 10m] [--model M] [--egress registries|none|host,…|'{json}'] [--id ID] [--detach] [--with-worker]
  agent schedule create <name> --cron "0 1 * * *" [--timezone Europe/Paris] [--catchup-window 1h]
        [--no-pause-on-failure] -- <task start flags>   run the task on a Temporal Schedule
  agent schedule ls | pause <name> | unpause <name> | trigger <name> | delete <name>`;
