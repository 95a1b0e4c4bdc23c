/**
 * Parses `agent` command lines into typed commands. Pure: no I/O, so it is tested directly.
 * Every problem is one line that names the flag or argument. Coding tasks and schedules are parsed
 * in `task-args.ts`.
 */
import { parseReportCommand, parseScheduleCommand, parseTaskCommand, TASK_HELP, type TaskCommand } from './task-args';
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
  | { kind: 'worker'; role: 'brain' | 'hands' | 'dev' }
  | { kind: 'server'; action: 'start' | 'stop' | 'status' }
  | { kind: 'sandbox'; args: string[] };

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
    if (value === undefined || (inline === undefined && value.startsWith('--')))
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
    case 'diff': {
      const { positional } = parseFlags(rest, {});
      return { kind: 'diff', id: one(positional, 'operation id', 'diff') };
    }
    case 'worker': {
      const { positional } = parseFlags(rest, {});
      const role = positional[0] ?? 'dev';
      if (role !== 'brain' && role !== 'hands' && role !== 'dev')
        throw new UsageError(`agent worker: role must be brain, hands or dev, got "${role}"`);
      return { kind: 'worker', role };
    }
    case 'server': {
      const { positional } = parseFlags(rest, {});
      const action = positional[0] ?? 'start';
      if (action !== 'start' && action !== 'stop' && action !== 'status')
        throw new UsageError(`agent server: action must be start, stop or status, got "${action}"`);
      return { kind: 'server', action };
    }
    case 'sandbox':
      return { kind: 'sandbox', args: rest };
    case 'task':
      return parseTaskCommand(rest);
    case 'report':
      return parseReportCommand(rest);
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
  agent worker [brain|hands|dev]    run a worker (dev: both, one process)
  agent server [start|stop|status]  the local Temporal dev server with its Web UI
  agent sandbox ls|rm <id>|gc       list and remove leftover sandboxes
${TASK_HELP}

Environment: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (and the temporal CLI's TLS/API-key variables),
ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, AGENT_MODEL, AGENT_BRAIN_QUEUE, AGENT_HANDS_QUEUE,
AGENT_TASKS_DIR, AGENT_GIT_TOKEN (hands worker: host-side git credentials).`;
