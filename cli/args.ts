/**
 * Parses `agent` command lines with the command table (`commands.ts`) and renders its help. Pure: no
 * I/O and no handler loaded, so it is tested directly and `agent --help` stays fast. Every problem is
 * a UsageError with one line that names the flag or argument.
 */
import { labelOf, listOf, type Flag, type TableEntry } from './command-line';
import { COMMANDS, GROUPS, type AgentCommand } from './commands';
import { UsageError } from './usage-error';

export { UsageError } from './usage-error';
export type * from './commands';

/** A parsed command line: the command, and how to run it (not for `help`). */
export interface ParsedCommandLine {
  command: AgentCommand;
  run?: () => Promise<number>;
}

const HELP_WORDS = new Set(['help', '--help', '-h']);

/** The command a command line names, typed; throws a UsageError naming what is wrong. */
export function parseAgentArgs(argv: readonly string[]): AgentCommand {
  return parseCommandLine(argv).command;
}

export function parseCommandLine(argv: readonly string[]): ParsedCommandLine {
  const [first, second] = argv;
  if (first === undefined || HELP_WORDS.has(first)) {
    const topic = first === 'help' ? argv.slice(1) : [];
    return { command: topic.length ? { kind: 'help', topic } : { kind: 'help' } };
  }
  let entry: TableEntry<AgentCommand> | undefined;
  let rest: readonly string[];
  const group = Object.hasOwn(GROUPS, first) ? GROUPS[first] : undefined;
  if (group) {
    const subcommands = entriesOf(first).map((e) => e.spec.path[1]!);
    if (second === undefined) {
      if (group.bare === 'help') return { command: { kind: 'help', topic: [first] } };
      throw new UsageError(`agent ${first}: expected ${quotedList(subcommands)}, got nothing`);
    }
    if (HELP_WORDS.has(second)) return { command: { kind: 'help', topic: [first] } };
    entry = entriesOf(first).find((e) => e.spec.path[1] === second || e.spec.aliases?.includes(second));
    if (!entry) throw new UsageError(`agent ${first}: expected ${quotedList(subcommands)}, got "${second}"`);
    rest = argv.slice(2);
  } else {
    entry = COMMANDS.find((e) => e.spec.path.length === 1 && e.spec.path[0] === first);
    if (!entry) throw new UsageError(`unknown command "${first}": run \`agent help\``);
    rest = argv.slice(1);
  }
  const parsed = entry.parse(rest);
  if ('help' in parsed) return { command: { kind: 'help', topic: entry.spec.path } };
  return parsed;
}

function entriesOf(group: string): Array<TableEntry<AgentCommand>> {
  return COMMANDS.filter((e) => e.spec.path.length === 2 && e.spec.path[0] === group);
}

/** `"start"` alone, or `ls or show`. */
function quotedList(words: readonly string[]): string {
  return words.length === 1 ? `"${words[0]}"` : listOf(words);
}

/** `agent run "<prompt>" [flags]`: how a command is written. */
function synopsis(entry: TableEntry<AgentCommand>): string {
  const { spec } = entry;
  const p = spec.positionals;
  const args = p.kind === 'none' ? '' : p.kind === 'optional' ? ` [${p.choices.join('|')}]` : ` ${p.shown}`;
  const required = spec.required ? ` ${spec.required}` : '';
  const flags = Object.keys(spec.flags).length ? ' [flags]' : '';
  return `${labelOf(spec)}${args}${required}${flags}${spec.rest ? ` ${spec.rest.shown}` : ''}`;
}

/** Help lines are wrapped at this width. */
const WIDTH = 100;

/** Two columns: the left padded to the widest (at most 40), the right wrapped under itself. */
function table(rows: ReadonlyArray<readonly [string, string]>, indent = '  '): string {
  const width = Math.min(40, Math.max(...rows.map(([left]) => left.length)));
  const column = indent.length + width + 2;
  return rows
    .map(([left, right]) => {
      const lines = wrap(right, Math.max(40, WIDTH - column));
      const head = left.length > width ? [`${indent}${left}`, ''] : [`${indent}${left.padEnd(width + 2)}`];
      const [first = '', ...more] = lines;
      if (head.length === 2) return [head[0], ...lines.map((line) => `${' '.repeat(column)}${line}`)].join('\n');
      return [`${head[0]}${first}`, ...more.map((line) => `${' '.repeat(column)}${line}`)].join('\n');
    })
    .join('\n');
}

/** `text` in lines of at most `width` characters (a longer word stays whole). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  return line ? [...lines, line] : lines;
}

function flagRows(flags: Record<string, Flag>): Array<[string, string]> {
  return Object.entries(flags).map(([name, flag]) => [`--${name}${flag.value ? ` ${flag.value}` : ''}`, flag.help]);
}

const OVERVIEW_HEAD = `agent — run a durable coding agent on Temporal

Usage: agent <command> [arguments] [flags]; agent <command> --help lists its flags.
`;

const OVERVIEW_TAIL = `
Settings come from the environment (the Temporal connection as for the temporal CLI, the task
queues, the model, the sandboxes): docs/configuration.md lists every variable.`;

/** The help of `topic` (nothing: every command); throws a UsageError for an unknown topic. */
export function helpText(topic: readonly string[] = []): string {
  if (topic.length === 0)
    return `${OVERVIEW_HEAD}\n${table(COMMANDS.map((e) => [synopsis(e), e.spec.summary]))}\n${OVERVIEW_TAIL}`;
  const entry = COMMANDS.find((e) => e.spec.path.join(' ') === topic.join(' '));
  if (entry) {
    const { spec } = entry;
    const flags = flagRows(spec.flags);
    return [
      `Usage: ${synopsis(entry)}`,
      '',
      ...wrap([spec.summary, ...(spec.details ?? [])].join(' '), WIDTH - 2).map((line) => `  ${line}`),
      ...(flags.length ? ['', 'Flags:', table(flags)] : []),
      ...(spec.rest ? ['', `After --: ${spec.rest.help}`] : []),
    ].join('\n');
  }
  const group = topic.length === 1 ? GROUPS[topic[0]!] : undefined;
  if (group)
    return `agent ${topic[0]} — ${group.summary}\n\n${table(entriesOf(topic[0]!).map((e) => [synopsis(e), e.spec.summary]))}\n\nagent ${topic[0]} <command> --help lists its flags.`;
  throw new UsageError(`unknown command "${topic.join(' ')}": run \`agent help\``);
}
