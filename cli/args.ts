/**
 * Parses `agent` command lines into typed commands. Pure: no I/O, so it is tested directly.
 * Every problem is one line that names the flag or argument. Coding tasks and schedules are parsed
 * in `task-args.ts`.
 */
import { parseEgressFlag, type EgressPolicy } from '../common/egress';
import { parseDuration } from '../common/duration';
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
      /** The session (default: a new one; `--id` alone names both the session and the operation). */
      session?: string;
      lane?: string;
      /** `--new`: a fresh context in the lane. */
      newContext?: boolean;
      /** `--json`: one JSON line at the end, everything else on stderr. */
      json?: boolean;
      /** `--approvals '<json map>'` (validated with the operation input). */
      approvals?: string;
      approvalTimeoutMs?: number;
      /** `--egress none|registries|<host,…>|'<json>'` (`common/egress.ts`). */
      egress?: EgressPolicy;
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
  | { kind: 'doctor'; json: boolean }
  | { kind: 'session'; action: 'ls'; json: boolean }
  | { kind: 'session'; action: 'show'; sessionId: string; json: boolean }
  | {
      kind: 'events';
      id: string;
      lane?: string;
      types?: string[];
      from?: number;
      to?: number;
      follow: boolean;
      json: boolean;
    }
  | { kind: 'approve'; operationId: string; toolCallId: string; deny?: string }
  | { kind: 'fact'; action: 'set'; sessionId: string; key: string; value: string }
  | { kind: 'fact'; action: 'get'; sessionId: string; key: string }
  | { kind: 'fact'; action: 'ls'; sessionId: string; json: boolean };

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
        session: 'string',
        lane: 'string',
        new: 'boolean',
        json: 'boolean',
        approvals: 'string',
        'approval-timeout': 'string',
        egress: 'string',
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
        ...runSessionFlags(flags),
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
    case 'session':
      return parseSessionCommand(rest);
    case 'events':
      return parseEventsCommand(rest);
    case 'approve': {
      const { positional, flags } = parseFlags(rest, { deny: 'string' });
      if (positional.length !== 2) throw new UsageError('agent approve: expected an operation id and a tool call id');
      const deny = flags.deny as string | undefined;
      return {
        kind: 'approve',
        operationId: positional[0],
        toolCallId: positional[1],
        ...(deny !== undefined ? { deny } : {}),
      };
    }
    case 'fact':
      return parseFactCommand(rest);
    default:
      throw new UsageError(`unknown command "${command}": run \`agent help\``);
  }
}

type Flags = Record<string, string | number | boolean>;

function runSessionFlags(flags: Flags): Partial<Extract<AgentCommand, { kind: 'run' }>> {
  const out: Partial<Extract<AgentCommand, { kind: 'run' }>> = {};
  if (flags.session !== undefined) out.session = flags.session as string;
  if (flags.lane !== undefined) out.lane = flags.lane as string;
  if (flags.new === true) out.newContext = true;
  if (flags.json === true) out.json = true;
  if (flags.approvals !== undefined) {
    try {
      JSON.parse(flags.approvals as string);
    } catch {
      throw new UsageError(`--approvals must be a JSON object, e.g. '{"bash:/git push/": "ask"}'`);
    }
    out.approvals = flags.approvals as string;
  }
  if (flags['approval-timeout'] !== undefined) out.approvalTimeoutMs = durationFlag('approval-timeout', flags);
  if (flags.egress !== undefined) out.egress = egressFlag(String(flags.egress));
  return out;
}

/** `--egress`, checked like the input field it becomes. */
export function egressFlag(text: string): EgressPolicy {
  const parsed = parseEgressFlag(text);
  if (!parsed.ok) throw new UsageError(parsed.error);
  return parsed.value;
}

function durationFlag(name: string, flags: Flags): number {
  try {
    return parseDuration(String(flags[name]));
  } catch (err) {
    throw new UsageError(`--${name}: ${(err as Error).message}`);
  }
}

function parseSessionCommand(rest: string[]): AgentCommand {
  const [action, ...args] = rest;
  const { positional, flags } = parseFlags(args, { json: 'boolean' });
  const json = flags.json === true;
  if (action === 'ls') {
    if (positional.length) throw new UsageError('agent session ls: takes no arguments');
    return { kind: 'session', action: 'ls', json };
  }
  if (action === 'show')
    return { kind: 'session', action: 'show', sessionId: one(positional, 'session id', 'session show'), json };
  throw new UsageError(`agent session: expected ls or show, got ${action === undefined ? 'nothing' : `"${action}"`}`);
}

function parseEventsCommand(rest: string[]): AgentCommand {
  const { positional, flags } = parseFlags(rest, {
    lane: 'string',
    type: 'string',
    from: 'number',
    to: 'number',
    follow: 'boolean',
    json: 'boolean',
  });
  const types =
    flags.type === undefined
      ? undefined
      : String(flags.type)
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean);
  if (types && types.length === 0) throw new UsageError('--type needs at least one event type');
  const from = flags.from as number | undefined;
  const to = flags.to as number | undefined;
  if (from !== undefined && to !== undefined && to < from) throw new UsageError(`--to ${to} is before --from ${from}`);
  return {
    kind: 'events',
    id: one(positional, 'session or operation id', 'events'),
    ...(flags.lane !== undefined ? { lane: flags.lane as string } : {}),
    ...(types ? { types } : {}),
    ...(from !== undefined ? { from } : {}),
    ...(to !== undefined ? { to } : {}),
    follow: flags.follow === true,
    json: flags.json === true,
  };
}

function parseFactCommand(rest: string[]): AgentCommand {
  const [action, ...args] = rest;
  const { positional, flags } = parseFlags(args, { json: 'boolean' });
  const expect = (count: number, what: string): void => {
    if (positional.length !== count) throw new UsageError(`agent fact ${action}: expected ${what}`);
  };
  switch (action) {
    case 'set':
      expect(3, 'a session id, a key and a value (quote the value)');
      return { kind: 'fact', action: 'set', sessionId: positional[0], key: positional[1], value: positional[2] };
    case 'get':
      expect(2, 'a session id and a key');
      return { kind: 'fact', action: 'get', sessionId: positional[0], key: positional[1] };
    case 'ls':
      expect(1, 'a session id');
      return { kind: 'fact', action: 'ls', sessionId: positional[0], json: flags.json === true };
    default:
      throw new UsageError(
        `agent fact: expected set, get or ls, got ${action === undefined ? 'nothing' : `"${action}"`}`,
      );
  }
}

export const HELP = `agent — run a durable coding agent on Temporal

  agent run [--repo <path>] "<prompt>"   submit a prompt and follow it live (Ctrl-C detaches)
        [--session S] [--lane L] [--new] [--detach] [--json] [--with-worker]
        [--id <operation id>] [--model <name>] [--max-turns N] [--eager-sandbox] [--keep-container]
        [--approvals '{"bash:/git push/": "ask"}'] [--approval-timeout 30m]
        [--egress none|registries|host,…|'{"allow":[…]}']   what the sandbox may reach (default none)
                                    without --session: a new session; a busy lane queues the prompt
  agent session ls|show <S> [--json] the sessions, or one session's lanes, operations and facts
  agent events <S|operation> [--lane L] [--type T[,T]] [--from N] [--to N] [--follow] [--json]
                                    the typed session log (--follow keeps printing, text live)
  agent approve <operation> <toolCallId> [--deny "why"]   decide a call waiting for approval
  agent fact set <S> <key> <value> · agent fact get <S> <key> · agent fact ls <S> [--json]
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
