/**
 * Parses `agent` command lines into typed commands. Pure: no I/O, so it is tested directly.
 * Every problem is one line that names the flag or argument. Coding tasks and schedules are parsed
 * in `task-args.ts`.
 */
import { parseScheduleCommand, parseTaskCommand, TASK_HELP, type TaskCommand } from './task-args';
import { UsageError } from './usage-error';

export { UsageError } from './usage-error';

export type AgentCommand =
  | TaskCommand
  | { kind: 'help' }
  | {
      kind: 'run';
      goal: string;
      repo?: string;
      id?: string;
      model?: string;
      maxTurns?: number;
      detach: boolean;
      withWorker: boolean;
      eagerSandbox: boolean;
      keepContainer: boolean;
    }
  | { kind: 'status'; id: string; json: boolean }
  | { kind: 'abort'; id: string; reason?: string }
  | { kind: 'steer'; id: string; text: string }
  | { kind: 'diff'; id: string }
  | { kind: 'report'; id: string; json: boolean; steps: boolean }
  | { kind: 'compact'; id: string; reason?: string }
  | { kind: 'worker'; role: 'brain' | 'hands' | 'dev' }
  | { kind: 'server'; action: 'start' | 'stop' | 'status' }
  | { kind: 'sandbox'; args: string[] }
  | { kind: 'setup' }
  | { kind: 'doctor'; json: boolean };

interface FlagSpec {
  [flag: string]: 'string' | 'number' | 'boolean';
}

function parseFlags(
  argv: string[],
  spec: FlagSpec,
): { positional: string[]; flags: Record<string, string | number | boolean> } {
  const positional: string[] = [];
  const flags: Record<string, string | number | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (/^-[^-]/.test(arg) && !/^-\d/.test(arg)) {
      throw new UsageError(`unknown flag ${arg} (text that starts with "-" goes after --)`);
    }
    if (!arg.startsWith('--') || arg === '-') {
      positional.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2);
    const type = spec[name];
    if (!type) throw new UsageError(`unknown flag --${name}`);
    if (type === 'boolean') {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
      flags[name] = true;
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined || value === '' || (inline === undefined && value.startsWith('--')))
      throw new UsageError(`--${name} needs a value`);
    if (type === 'number') {
      const n = Number(value);
      if (!Number.isInteger(n) || n <= 0)
        throw new UsageError(`--${name} must be a positive whole number, got "${value}"`);
      flags[name] = n;
    } else {
      flags[name] = value;
    }
  }
  return { positional, flags };
}

/** At most `max` positional arguments for a command that takes an optional one. */
function atMostOne(positional: string[], what: string, command: string): string | undefined {
  if (positional.length > 1)
    throw new UsageError(`agent ${command}: expected at most one ${what}, got ${positional.length} arguments`);
  return positional[0];
}

/** Most turns `--max-turns` may ask for (the operation's budget limit). */
const MAX_TURNS_LIMIT = 10_000;
// eslint-disable-next-line no-control-regex -- the point is to find control characters
const CONTROL_OR_SPACE = /[\u0000-\u0020\u007f]/;

function one(positional: string[], what: string, command: string): string {
  if (positional.length === 0 || !positional[0].trim()) throw new UsageError(`agent ${command}: missing ${what}`);
  if (positional.length > 1)
    throw new UsageError(`agent ${command}: expected one ${what}, got ${positional.length} arguments (quote it)`);
  return positional[0];
}

export function parseAgentArgs(argv: string[]): AgentCommand {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      return { kind: 'help' };
    case 'run': {
      const { positional, flags } = parseFlags(rest, {
        repo: 'string',
        id: 'string',
        model: 'string',
        'max-turns': 'number',
        detach: 'boolean',
        'with-worker': 'boolean',
        'eager-sandbox': 'boolean',
        'keep-container': 'boolean',
      });
      const maxTurns = flags['max-turns'] as number | undefined;
      if (maxTurns !== undefined && maxTurns > MAX_TURNS_LIMIT)
        throw new UsageError(`--max-turns must be at most ${MAX_TURNS_LIMIT}, got ${maxTurns}`);
      const id = flags.id as string | undefined;
      if (id !== undefined && (CONTROL_OR_SPACE.test(id) || id.length > 200))
        throw new UsageError(
          `--id must be at most 200 characters without spaces or control characters, got ${JSON.stringify(id)}`,
        );
      return {
        kind: 'run',
        goal: one(positional, 'goal', 'run'),
        repo: flags.repo as string | undefined,
        id: flags.id as string | undefined,
        model: flags.model as string | undefined,
        maxTurns: flags['max-turns'] as number | undefined,
        detach: flags.detach === true,
        withWorker: flags['with-worker'] === true,
        eagerSandbox: flags['eager-sandbox'] === true,
        keepContainer: flags['keep-container'] === true,
      };
    }
    case 'status': {
      const { positional, flags } = parseFlags(rest, { json: 'boolean' });
      return { kind: 'status', id: one(positional, 'operation id', 'status'), json: flags.json === true };
    }
    case 'abort': {
      const { positional, flags } = parseFlags(rest, { reason: 'string' });
      return {
        kind: 'abort',
        id: one(positional, 'operation id', 'abort'),
        reason: flags.reason as string | undefined,
      };
    }
    case 'steer': {
      const { positional } = parseFlags(rest, {});
      if (positional.length !== 2)
        throw new UsageError('agent steer: expected an operation id and the text (quote it)');
      if (!positional[1].trim()) throw new UsageError('agent steer: the text is empty');
      return { kind: 'steer', id: positional[0], text: positional[1] };
    }
    case 'report': {
      const { positional, flags } = parseFlags(rest, { json: 'boolean', steps: 'boolean' });
      return {
        kind: 'report',
        id: one(positional, 'task or operation id', 'report'),
        json: flags.json === true,
        steps: flags.steps === true,
      };
    }
    case 'compact': {
      const { positional, flags } = parseFlags(rest, { reason: 'string' });
      return {
        kind: 'compact',
        id: one(positional, 'operation id', 'compact'),
        reason: flags.reason as string | undefined,
      };
    }
    case 'diff': {
      const { positional } = parseFlags(rest, {});
      return { kind: 'diff', id: one(positional, 'operation id', 'diff') };
    }
    case 'worker': {
      const { positional } = parseFlags(rest, {});
      const role = atMostOne(positional, 'role', 'worker') ?? 'dev';
      if (role !== 'brain' && role !== 'hands' && role !== 'dev')
        throw new UsageError(`agent worker: role must be brain, hands or dev, got "${role}"`);
      return { kind: 'worker', role };
    }
    case 'server': {
      const { positional } = parseFlags(rest, {});
      const action = atMostOne(positional, 'action', 'server') ?? 'start';
      if (action !== 'start' && action !== 'stop' && action !== 'status')
        throw new UsageError(`agent server: action must be start, stop or status, got "${action}"`);
      return { kind: 'server', action };
    }
    case 'sandbox':
      return { kind: 'sandbox', args: rest };
    case 'setup': {
      const { positional } = parseFlags(rest, {});
      if (positional.length) throw new UsageError(`agent setup takes no arguments, got "${positional[0]}"`);
      return { kind: 'setup' };
    }
    case 'doctor': {
      const { positional, flags } = parseFlags(rest, { json: 'boolean' });
      if (positional.length) throw new UsageError(`agent doctor takes no arguments, got "${positional[0]}"`);
      return { kind: 'doctor', json: flags.json === true };
    }
    case 'task':
      return parseTaskCommand(rest);
    case 'schedule':
      return parseScheduleCommand(rest);
    default:
      throw new UsageError(`unknown command "${command}": run \`agent help\``);
  }
}

export const HELP = `agent — run a durable coding agent on Temporal

  agent run --repo <path> "<goal>"   submit an operation and follow it live (Ctrl-C detaches)
        [--id <id>] [--model <name>] [--max-turns N] [--detach] [--with-worker]
        [--eager-sandbox] [--keep-container]
  agent status <id> [--json]        live status, or the final result
  agent steer <id> "<text>"         add a message; it enters the context at the next checkpoint
  agent abort <id> [--reason "..."] stop the operation: running tools are killed, it ends aborted
  agent diff <id>                   git diff of the operation's workspace
  agent report <id> [--json] [--steps]
                                    a task's morning report; for an operation, what the run cost: tokens
                                    by class, cache-hit rate, peak context, and what caching, output
                                    spill, context editing and compaction saved
  agent compact <id> [--reason ".."] compact the operation's context at its next checkpoint
  agent worker [brain|hands|dev]    run a worker (dev: both, one process)
  agent server [start|stop|status]  the local Temporal dev server with its Web UI
  agent sandbox ls|rm <id>|gc       list and remove leftover sandboxes
  agent setup                       register the search attributes on the namespace (any cluster); check the queues
  agent doctor [--json]             what is unhealthy (stuck operations, queues nobody polls, failing
                                    workflow tasks, leaked containers) and the command that fixes each
${TASK_HELP}

Environment: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (and the temporal CLI's TLS/API-key variables),
ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, AGENT_MODEL, AGENT_BRAIN_QUEUE, AGENT_HANDS_QUEUE,
AGENT_HANDS_HOST, AGENT_SANDBOX_PREFIX, AGENT_TASKS_DIR, AGENT_GIT_TOKEN (hands worker: host-side git
credentials).`;
