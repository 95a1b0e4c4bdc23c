/**
 * The `agent` command table: every command once — its words, flags, arguments, the typed command
 * they make, its handler and its help line (`command-line.ts` parses and renders help from it).
 * Handlers import their modules when they run, so the parse and the help load none of them.
 */
import {
  command,
  commaList,
  duration,
  egressValue,
  environmentValue,
  hooksValue,
  httpUrlValue,
  jsonObjectText,
  parseFlags,
  positiveInt,
  textValue,
  workflowIdValue,
  type TableEntry,
  type ValueFlag,
} from './command-line';
import {
  cronOf,
  DEFAULT_CATCHUP_WINDOW_MS,
  scheduleName,
  TASK_FLAGS,
  taskSpecOf,
  type TaskSpecArgs,
} from './task-args';
import { UsageError } from './usage-error';
import { buildIdProblem } from '../common/deployment-names';

import type {
  AgentCommand,
  ApproveCommand,
  DeployCommand,
  EventsCommand,
  FactCommand,
  OperationCommand,
  PullRequestCommand,
  RewindCommand,
  RunCommand,
  SandboxCommand,
  ScheduleCommand,
  SessionCommand,
  TaskStartCommand,
} from './command-types';

export type * from './command-types';

const MAX_TURNS_LIMIT = 10_000;
/** Where `npm run jaeger` answers. */
const DEFAULT_JAEGER_URL = 'http://127.0.0.1:16686';

const json = { help: 'machine-readable output (JSON)' };
const text = (value: string, help: string): ValueFlag<string> => ({ value, help, schema: textValue });
const operationId = { kind: 'one', what: 'operation id', shown: '<id>' } as const;

const RUN = command({
  path: ['run'],
  summary: 'submit a prompt to a session and follow it live: the text as it streams, each tool call (Ctrl-C detaches)',
  details: [
    'Without --session: a new session (its id is printed). A busy lane queues the prompt as a follow-up.',
    "The prompt is durable once accepted: its operation started, or queued behind the lane's open one.",
  ],
  flags: {
    repo: text(
      '<path>',
      "the repository the session works on (a new session; inside the hands worker's allowed roots)",
    ),
    session: text('<S>', 'the session to continue (default: a new one)'),
    lane: text('<L>', 'the lane (default main); lanes run in parallel'),
    new: { help: 'a fresh context in the lane instead of continuing its conversation' },
    detach: { help: 'return once the prompt is accepted' },
    json: { help: 'one JSON line at the end ({"operationId",…,"state"}); everything else on stderr' },
    'with-worker': { help: 'run a dev worker (brain + hands) in this process for the run' },
    id: {
      value: '<operation id>',
      help: 'the operation id (and, without --session, the session id)',
      schema: workflowIdValue,
    },
    model: text('<name>', 'the model (default AGENT_MODEL)'),
    'max-turns': {
      value: 'N',
      help: `the turn budget (at most ${MAX_TURNS_LIMIT})`,
      schema: positiveInt(MAX_TURNS_LIMIT),
    },
    'eager-sandbox': { help: 'make the sandbox before the first model call' },
    'ask-over-budget': { help: 'a spent budget waits for agent approve (budget-<n>) to extend it instead of ending' },
    'keep-container': { help: "keep the session's container after the operation (a new session)" },
    approvals: {
      value: '\'{"bash:/git push/": "ask"}\'',
      help: 'approval rules: a tool or "<tool>:/<regex>/" → auto | ask | deny',
      schema: jsonObjectText('{"bash:/git push/": "ask"}'),
    },
    'approval-timeout': {
      value: '30m',
      help: 'how long an ask waits before it is denied (default 24h)',
      schema: duration,
    },
    egress: {
      value: 'none|registries|<host,…>|\'{"allow":[…]}\'',
      help: 'what the sandbox may reach (default none)',
      schema: egressValue,
    },
    environment: {
      value: "default|'{json}'",
      help: "what the sandbox runs in (a new session; default: the repository's devcontainer.json, else detected)",
      schema: environmentValue,
    },
    hooks: { value: "'{json}'|<file>", help: 'hooks on named events (docs/hooks.md)', schema: hooksValue },
  },
  positionals: { kind: 'one', what: 'goal', shown: '"<prompt>"' },
  build: ({ flags, args }): RunCommand => ({
    kind: 'run',
    goal: args[0],
    repo: flags.repo,
    id: flags.id,
    model: flags.model,
    maxTurns: flags['max-turns'],
    ...(flags['ask-over-budget'] ? { askOverBudget: true } : {}),
    detach: flags.detach === true,
    withWorker: flags['with-worker'] === true,
    eagerSandbox: flags['eager-sandbox'] === true,
    keepContainer: flags['keep-container'] === true,
    ...(flags.session !== undefined ? { session: flags.session } : {}),
    ...(flags.lane !== undefined ? { lane: flags.lane } : {}),
    ...(flags.new ? { newContext: true } : {}),
    ...(flags.json ? { json: true } : {}),
    ...(flags.approvals !== undefined ? { approvals: flags.approvals } : {}),
    ...(flags['approval-timeout'] !== undefined ? { approvalTimeoutMs: flags['approval-timeout'] } : {}),
    ...(flags.egress !== undefined ? { egress: flags.egress } : {}),
    ...(flags.environment !== undefined ? { environment: flags.environment } : {}),
    ...(flags.hooks !== undefined ? { hooks: flags.hooks } : {}),
  }),
  run: async (c) => (await import('./run')).run(c),
});

const SESSION = [
  command({
    path: ['session', 'ls'],
    summary: 'the sessions',
    flags: { json },
    positionals: { kind: 'none' },
    build: ({ flags }): SessionCommand => ({ kind: 'session', action: 'ls', json: flags.json === true }),
    run: async (c) => (await import('./sessions')).sessionCommand(c),
  }),
  command({
    path: ['session', 'show'],
    summary: 'one session: its lanes, queues, operations, facts and sandbox',
    flags: { json },
    positionals: { kind: 'one', what: 'session id', shown: '<S>' },
    build: ({ flags, args }): SessionCommand => ({
      kind: 'session',
      action: 'show',
      sessionId: args[0],
      json: flags.json === true,
    }),
    run: async (c) => (await import('./sessions')).sessionCommand(c),
  }),
];

const EVENTS = command({
  path: ['events'],
  summary: 'the typed session log of a session (or of one operation, with its subagents)',
  flags: {
    lane: text('<L>', 'only this lane'),
    type: {
      value: 'T[,T]',
      help: 'only these types or families (tool, approval.decided, …)',
      schema: commaList('event type'),
    },
    from: { value: 'N', help: 'from this sequence number', schema: positiveInt() },
    to: { value: 'N', help: 'up to this sequence number', schema: positiveInt() },
    follow: { help: "keep printing as events are recorded; the model's text streams live" },
    json: { help: 'one JSON object per line' },
  },
  positionals: { kind: 'one', what: 'session or operation id', shown: '<S|operation>' },
  build: ({ flags, args }): EventsCommand => {
    if (flags.from !== undefined && flags.to !== undefined && flags.to < flags.from)
      throw new UsageError(`--to ${flags.to} is before --from ${flags.from}`);
    return {
      kind: 'events',
      id: args[0],
      ...(flags.lane !== undefined ? { lane: flags.lane } : {}),
      ...(flags.type ? { types: flags.type } : {}),
      ...(flags.from !== undefined ? { from: flags.from } : {}),
      ...(flags.to !== undefined ? { to: flags.to } : {}),
      follow: flags.follow === true,
      json: flags.json === true,
    };
  },
  run: async (c) => (await import('./events')).eventsCommand(c),
});

const APPROVE = command({
  path: ['approve'],
  summary:
    'decide a tool call that waits for approval (it runs, or with --deny the model reads why not), or a spent budget (budget-<n>: extended, or the run ends)',
  flags: { deny: text('"why"', 'deny it, with the reason the model reads') },
  positionals: { kind: 'exactly', names: ['an operation id', 'a tool call id'], shown: '<operation> <toolCallId>' },
  build: ({ flags, args }): ApproveCommand => ({
    kind: 'approve',
    operationId: args[0],
    toolCallId: args[1],
    ...(flags.deny !== undefined ? { deny: flags.deny } : {}),
  }),
  run: async (c) => (await import('./sessions')).approveCommand(c),
});

const FACT = [
  command({
    path: ['fact', 'set'],
    summary: "set a session's global fact (every lane sees it at its next checkpoint)",
    flags: {},
    positionals: {
      kind: 'exactly',
      names: ['a session id', 'a key', 'a value'],
      shown: '<S> <key> <value>',
      hint: '(quote the value)',
    },
    build: ({ args }): FactCommand => ({
      kind: 'fact',
      action: 'set',
      sessionId: args[0],
      key: args[1],
      value: args[2],
    }),
    run: async (c) => (await import('./sessions')).factCommand(c),
  }),
  command({
    path: ['fact', 'get'],
    summary: "a session's fact",
    flags: {},
    positionals: { kind: 'exactly', names: ['a session id', 'a key'], shown: '<S> <key>' },
    build: ({ args }): FactCommand => ({ kind: 'fact', action: 'get', sessionId: args[0], key: args[1] }),
    run: async (c) => (await import('./sessions')).factCommand(c),
  }),
  command({
    path: ['fact', 'ls'],
    summary: "a session's facts",
    flags: { json },
    positionals: { kind: 'exactly', names: ['a session id'], shown: '<S>' },
    build: ({ flags, args }): FactCommand => ({
      kind: 'fact',
      action: 'ls',
      sessionId: args[0],
      json: flags.json === true,
    }),
    run: async (c) => (await import('./sessions')).factCommand(c),
  }),
];

const operations = async () => import('./operations');

const OPERATION = [
  command({
    path: ['status'],
    summary: 'live status of an operation or coding task, or its result once it has ended',
    flags: { json },
    positionals: operationId,
    build: ({ flags, args }): OperationCommand => ({ kind: 'status', id: args[0], json: flags.json === true }),
    run: async (c) => (await operations()).operationCommand(c),
  }),
  command({
    path: ['steer'],
    summary: 'add a message to a running operation; it enters the context at the next checkpoint',
    flags: {},
    positionals: {
      kind: 'exactly',
      names: ['an operation id', 'the text'],
      shown: '<id> "<text>"',
      hint: '(quote it)',
      nonBlank: true,
    },
    build: ({ args }): OperationCommand => ({ kind: 'steer', id: args[0], text: args[1] }),
    run: async (c) => (await operations()).operationCommand(c),
  }),
  command({
    path: ['abort'],
    summary: 'stop an operation: its running tools are killed, it ends aborted',
    flags: { reason: text('"…"', 'why (recorded)') },
    positionals: operationId,
    build: ({ flags, args }): OperationCommand => ({ kind: 'abort', id: args[0], reason: flags.reason }),
    run: async (c) => (await operations()).operationCommand(c),
  }),
  command({
    path: ['diff'],
    summary: "git diff of the operation's workspace",
    flags: {},
    positionals: operationId,
    build: ({ args }): OperationCommand => ({ kind: 'diff', id: args[0] }),
    run: async (c) => (await operations()).operationCommand(c),
  }),
  command({
    path: ['report'],
    summary:
      "a coding task's morning report; for an operation, what it cost: tokens by class, cache-hit rate, peak context, and what caching, output spill, context editing and compaction saved; for a session, its tokens and cost per lane and in all",
    flags: { json, steps: { help: "an operation's step table" } },
    positionals: { kind: 'one', what: 'task, operation or session id', shown: '<id>' },
    build: ({ flags, args }): OperationCommand => ({
      kind: 'report',
      id: args[0],
      json: flags.json === true,
      steps: flags.steps === true,
    }),
    run: async (c) => (await operations()).operationCommand(c),
  }),
  command({
    path: ['compact'],
    summary: "compact a running operation's context at its next checkpoint",
    flags: { reason: text('"…"', 'why (recorded)') },
    positionals: operationId,
    build: ({ flags, args }): OperationCommand => ({ kind: 'compact', id: args[0], reason: flags.reason }),
    run: async (c) => (await operations()).operationCommand(c),
  }),
];

const rewinds = async () => import('./rewind');

const REWIND = [
  command({
    path: ['checkpoints'],
    summary: "an operation's checkpoints of its workspace: turn, time, files changed",
    flags: { json },
    positionals: operationId,
    build: ({ flags, args }): RewindCommand => ({
      kind: 'checkpoints',
      operationId: args[0],
      json: flags.json === true,
    }),
    run: async (c) => (await rewinds()).rewindCommand(c),
  }),
  command({
    path: ['rewind'],
    summary:
      'go back to a turn of an operation as a new session: its conversation and its workspace as they were then (the original stays as it is).',
    required: '--to-turn N',
    details: [
      "The new lane's first request is the original's conversation up to the turn, then --prompt; its workspace",
      "is restored from the turn's checkpoint (see agent checkpoints). --code-only restores the files alone.",
    ],
    flags: {
      'to-turn': {
        value: 'N',
        help: 'the turn to go back to (after its tools ran)',
        schema: positiveInt(MAX_TURNS_LIMIT),
      },
      prompt: text('"…"', "the new lane's first prompt (without it, continue with agent run --session)"),
      lane: text('<L>', "the new lane (default: the operation's lane)"),
      'code-only': { help: 'restore the workspace alone; the new lane starts a fresh context' },
      session: text('<S>', "the new session's id (default: a new one)"),
      json: { help: 'one JSON line at the end ({"sessionId","lane","operationId"}); everything else on stderr' },
    },
    positionals: operationId,
    build: ({ flags, args }): RewindCommand => {
      if (flags['to-turn'] === undefined)
        throw new UsageError(
          '--to-turn N is required: the turn to go back to (agent checkpoints <operation> lists them)',
        );
      return {
        kind: 'rewind',
        operationId: args[0],
        toTurn: flags['to-turn'],
        ...(flags.lane !== undefined ? { lane: flags.lane } : {}),
        ...(flags.prompt !== undefined ? { prompt: flags.prompt } : {}),
        codeOnly: flags['code-only'] === true,
        ...(flags.session !== undefined ? { session: flags.session } : {}),
        json: flags.json === true,
      };
    },
    run: async (c) => (await rewinds()).rewindCommand(c),
  }),
];

const ROLES = ['brain', 'hands', 'dev'] as const;
const SERVER_ACTIONS = ['start', 'stop', 'status'] as const;

const PROCESSES = [
  command({
    path: ['worker'],
    summary: 'run a worker until Ctrl-C: brain, hands (one per Docker host) or dev (both, one process)',
    flags: {},
    positionals: { kind: 'optional', what: 'role', choices: ROLES, fallback: 'dev' },
    build: ({ args }) => ({ kind: 'worker' as const, role: ROLES.find((role) => role === args[0]) ?? 'dev' }),
    run: async (c) => (await import('./worker')).workerCommand(c.role),
  }),
  command({
    path: ['server'],
    summary: 'the local Temporal dev server with its Web UI (start reuses one that is up)',
    flags: {},
    positionals: { kind: 'optional', what: 'action', choices: SERVER_ACTIONS, fallback: 'start' },
    build: ({ args }) => ({
      kind: 'server' as const,
      action: SERVER_ACTIONS.find((action) => action === args[0]) ?? 'start',
    }),
    run: async (c) => (await import('./server')).serverCommand(c.action),
  }),
];

/** `agent sandbox`'s messages say "option", as they always have. */
const SANDBOX = [
  command({
    path: ['sandbox', 'ls'],
    aliases: ['list'],
    summary: 'the sandboxes (containers and workspace volumes) this host has',
    flags: {},
    flagWord: 'option',
    positionals: { kind: 'none', message: (got) => `sandbox ls takes no arguments (got ${got.join(' ')})` },
    build: (): SandboxCommand => ({ kind: 'sandbox-ls' }),
    run: async (c) => (await import('./sandbox')).runSandboxCommand(c),
  }),
  command({
    path: ['sandbox', 'rm'],
    summary: "remove a sandbox's container and its workspace volume",
    flags: { 'keep-volume': { help: 'remove the container only' } },
    flagWord: 'option',
    positionals: {
      kind: 'exactly',
      names: ['a sandbox id'],
      shown: '<id>',
      message: 'sandbox rm needs exactly one sandbox id: agent sandbox rm <id>',
    },
    build: ({ flags, args }): SandboxCommand => ({
      kind: 'sandbox-rm',
      sessionId: args[0],
      keepVolume: flags['keep-volume'] === true,
    }),
    run: async (c) => (await import('./sandbox')).runSandboxCommand(c),
  }),
  command({
    path: ['sandbox', 'gc'],
    summary: 'remove sandbox containers made longer ago than --older-than',
    flags: {
      'older-than': { value: '24h', help: 'their age (default 24h)', schema: duration },
      volumes: { help: 'also their workspace volumes (their files are lost)' },
      environments: {
        help: 'also environment images and dependency caches no workspace uses, unused for longer than --older-than',
      },
    },
    flagWord: 'option',
    positionals: { kind: 'none' },
    build: ({ flags }): SandboxCommand => ({
      kind: 'sandbox-gc',
      olderThanMs: flags['older-than'] ?? DEFAULT_GC_AGE_MS,
      volumes: flags.volumes === true,
      environments: flags.environments === true,
    }),
    run: async (c) => (await import('./sandbox')).runSandboxCommand(c),
  }),
  command({
    path: ['sandbox', 'envs'],
    summary: 'environment images and dependency caches: size, last use, the workspaces using them',
    flags: { json },
    flagWord: 'option',
    positionals: { kind: 'none' },
    build: ({ flags }): SandboxCommand => ({ kind: 'sandbox-envs', json: flags.json === true }),
    run: async (c) => (await import('./sandbox')).runSandboxCommand(c),
  }),
];

const DEFAULT_GC_AGE_MS = 24 * 3_600_000;

const OPS = [
  command({
    path: ['setup'],
    summary: 'make a namespace ready (register the search attributes; any cluster) and check the queues',
    flags: {},
    positionals: { kind: 'none' },
    build: () => ({ kind: 'setup' as const }),
    run: async () => (await import('./setup')).setupCommand(),
  }),
  command({
    path: ['doctor'],
    summary:
      'what is unhealthy (stuck operations, queues nobody polls, failing workflow tasks, work pinned to a build no worker runs, leaked containers) and the command that fixes each',
    flags: { json },
    positionals: { kind: 'none' },
    build: ({ flags }) => ({ kind: 'doctor' as const, json: flags.json === true }),
    run: async (c) => (await import('./doctor')).doctorCommand(c.json),
  }),
  command({
    path: ['trace'],
    summary:
      "an operation's or coding task's trace as Jaeger holds it: its operations, model steps and tool calls as a tree",
    details: [
      'The workers export spans when OTEL_EXPORTER_OTLP_ENDPOINT is set; `npm run jaeger` runs a Jaeger to send them to.',
    ],
    flags: {
      jaeger: {
        value: '<url>',
        help: `Jaeger's query address (default ${DEFAULT_JAEGER_URL})`,
        schema: httpUrlValue,
      },
      json,
    },
    positionals: { kind: 'one', what: 'operation or task id', shown: '<id>' },
    build: ({ flags, args }) => ({
      kind: 'trace' as const,
      id: args[0],
      jaeger: flags.jaeger ?? DEFAULT_JAEGER_URL,
      json: flags.json === true,
    }),
    run: async (c) => (await import('./trace')).traceCommand(c.id, { jaeger: c.jaeger, json: c.json }),
  }),
];

const schedules = async () => import('./schedule');

const TASKS = [
  command({
    path: ['task', 'start'],
    summary: 'start an overnight coding task on a branch and follow it; its morning report at the end',
    required: '(--repo <path> | --git <url>)',
    flags: {
      ...TASK_FLAGS,
      id: { value: '<id>', help: 'the task id', schema: workflowIdValue },
      detach: { help: 'return once the task is started' },
      'with-worker': { help: 'run a dev worker (brain + hands) in this process' },
    },
    positionals: { kind: 'none', message: (got) => `unexpected argument "${got[0]}" (every option is a flag)` },
    build: ({ flags }): TaskStartCommand => ({
      kind: 'task-start',
      task: taskSpecOf(flags),
      ...(flags.id !== undefined ? { id: flags.id } : {}),
      detach: flags.detach === true,
      withWorker: flags['with-worker'] === true,
    }),
    run: async (c) => (await import('./task')).taskStart(c),
  }),
  command({
    path: ['schedule', 'create'],
    summary: 'run a coding task on a Temporal Schedule (each run on the branch agent/<name>)',
    required: '--cron "<cron>"',
    details: [
      'A run still going makes the next one skip; runs missed while the server was down are caught up within',
      'the catch-up window; a failed run pauses the schedule.',
    ],
    flags: {
      cron: text('"0 1 * * *"', 'when (5 to 7 fields, or @daily)'),
      timezone: text('Europe/Paris', 'the time zone of --cron (default UTC)'),
      'catchup-window': { value: '1h', help: 'how late a missed run may still start (default 1h)', schema: duration },
      'no-pause-on-failure': { help: 'keep the schedule going after a failed run' },
    },
    positionals: {
      kind: 'exactly',
      names: ['one schedule name'],
      shown: '<name>',
      message: 'agent schedule create: expected one schedule name before the flags',
    },
    rest: {
      shown: '-- <task start flags>',
      help: 'the task: the flags of `agent task start` (not --id, --detach, --with-worker)',
    },
    build: ({ flags, args, rest }): ScheduleCommand => {
      const name = scheduleName(args[0]);
      const cron = cronOf(flags.cron);
      if (!rest || rest.length === 0)
        throw new UsageError('give the task after "--", e.g. -- --repo /path --spec-path SPEC.md');
      const task = parseTaskFlags(rest);
      return {
        kind: 'schedule-create',
        name,
        cron,
        ...(flags.timezone !== undefined ? { timezone: flags.timezone } : {}),
        catchupWindowMs: flags['catchup-window'] ?? DEFAULT_CATCHUP_WINDOW_MS,
        pauseOnFailure: flags['no-pause-on-failure'] !== true,
        task,
      };
    },
    run: async (c) => (await schedules()).scheduleCommand(c),
  }),
  command({
    path: ['schedule', 'ls'],
    aliases: ['list'],
    summary: 'the schedules: state, cron, branch, last and next run',
    flags: {},
    positionals: { kind: 'none' },
    build: (): ScheduleCommand => ({ kind: 'schedule-ls' }),
    run: async (c) => (await schedules()).scheduleCommand(c),
  }),
  ...(['pause', 'unpause'] as const).map((action) =>
    command({
      path: ['schedule', action],
      summary: action === 'pause' ? 'pause a schedule' : 'unpause a schedule',
      flags: { note: text('"…"', 'why (shown with the schedule)') },
      positionals: { kind: 'exactly', names: ['one schedule name'], shown: '<name>' },
      build: ({ flags, args }): ScheduleCommand => ({
        kind: action === 'pause' ? 'schedule-pause' : 'schedule-unpause',
        name: scheduleName(args[0]),
        ...(flags.note ? { note: flags.note } : {}),
      }),
      run: async (c) => (await schedules()).scheduleCommand(c),
    }),
  ),
  command({
    path: ['schedule', 'trigger'],
    summary: 'a run now; prints its task id',
    flags: {},
    positionals: { kind: 'exactly', names: ['one schedule name'], shown: '<name>' },
    build: ({ args }): ScheduleCommand => ({ kind: 'schedule-trigger', name: scheduleName(args[0]) }),
    run: async (c) => (await schedules()).scheduleCommand(c),
  }),
  command({
    path: ['schedule', 'delete'],
    aliases: ['rm'],
    summary: 'delete a schedule (runs already started go on)',
    flags: {},
    positionals: { kind: 'exactly', names: ['one schedule name'], shown: '<name>' },
    build: ({ args }): ScheduleCommand => ({ kind: 'schedule-delete', name: scheduleName(args[0]) }),
    run: async (c) => (await schedules()).scheduleCommand(c),
  }),
];

/** `schedule create`'s task, after `--`: the task flags alone. */
function parseTaskFlags(argv: readonly string[]): TaskSpecArgs {
  const { flags, positionals } = parseFlags(TASK_FLAGS, argv);
  if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}" after "--"`);
  return taskSpecOf(flags);
}

const pullRequests = async () => import('./pull-requests');
const PR_ACTIONS = ['pause', 'resume', 'end'] as const;
const loopId = { kind: 'one', what: 'pull request (loop id or <forge>:<owner>/<name>#<n>)', shown: '<pr>' } as const;

const PULL_REQUESTS = [
  command({
    path: ['pr', 'ls'],
    aliases: ['list'],
    summary: 'the pull requests the harness looks after, with their state',
    flags: { json },
    positionals: { kind: 'none' },
    build: ({ flags }): PullRequestCommand => ({ kind: 'pr-ls', json: flags.json === true }),
    run: async (c) => (await pullRequests()).pullRequestCommand(c),
  }),
  command({
    path: ['pr', 'status'],
    summary: "a pull request's loop: its state, rounds, fix rounds left, replies waiting",
    flags: { json },
    positionals: loopId,
    build: ({ flags, args }): PullRequestCommand => ({ kind: 'pr-status', id: args[0], json: flags.json === true }),
    run: async (c) => (await pullRequests()).pullRequestCommand(c),
  }),
  ...PR_ACTIONS.map((action) =>
    command({
      path: ['pr', action],
      summary:
        action === 'pause'
          ? 'stop starting rounds on a pull request (a running round finishes)'
          : action === 'resume'
            ? 'start rounds on a paused pull request again'
            : 'stop looking after a pull request (a running round is cancelled)',
      flags: { reason: text('"…"', 'why (shown in the Web UI)') },
      positionals: loopId,
      build: ({ flags, args }): PullRequestCommand => ({
        kind: 'pr-control',
        id: args[0],
        action,
        ...(flags.reason ? { reason: flags.reason } : {}),
      }),
      run: async (c) => (await pullRequests()).pullRequestCommand(c),
    }),
  ),
  command({
    path: ['webhook', 'serve'],
    summary: "receive forges' webhooks (POST /webhooks/<forge>): signatures checked, each event handed to Temporal",
    details: ['The forges, their webhook secrets and tokens come from AGENT_FORGES and the secret store.'],
    flags: {
      host: text('<address>', 'the address to listen on (default 127.0.0.1)'),
      port: { value: '<port>', help: 'the port (default 8787)', schema: positiveInt(65_535) },
    },
    positionals: { kind: 'none' },
    build: ({ flags }): PullRequestCommand => ({
      kind: 'webhook-serve',
      host: flags.host ?? '127.0.0.1',
      port: flags.port ?? 8787,
    }),
    run: async (c) => (await pullRequests()).pullRequestCommand(c),
  }),
  command({
    path: ['forge', 'poll'],
    summary:
      "read a repository's labelled issues and /agent comments on a timer: for forges whose webhooks cannot reach the harness",
    flags: {
      every: { value: '<duration>', help: 'how often (default 2m)', schema: duration },
      stop: { help: 'stop polling the repository' },
    },
    positionals: { kind: 'one', what: 'repository (<forge>:<owner>/<name>)', shown: '<forge>:<owner>/<name>' },
    build: ({ flags, args }): PullRequestCommand => ({
      kind: 'forge-poll',
      repository: args[0],
      everyMs: flags.every ?? 120_000,
      stop: flags.stop === true,
    }),
    run: async (c) => (await pullRequests()).pullRequestCommand(c),
  }),
];

const deploys = async () => import('./deploy');
const deployment = text('<name>', 'the Worker Deployment (default AGENT_WORKER_DEPLOYMENT)');
const buildIdArg = { kind: 'one', what: 'build id', shown: '<build id>' } as const;

const DEPLOY = [
  command({
    path: ['deploy', 'status'],
    summary:
      "a Worker Deployment's versions: which is current or ramping, what still runs pinned to each, which are drained, and whether their workers poll",
    flags: { deployment, json },
    positionals: { kind: 'none' },
    build: ({ flags }): DeployCommand => ({
      kind: 'deploy-status',
      ...(flags.deployment !== undefined ? { deployment: flags.deployment } : {}),
      json: flags.json === true,
    }),
    run: async (c) => (await deploys()).deployCommand(c),
  }),
  command({
    path: ['deploy', 'set-current'],
    summary:
      'make a build current: new workflows start on it and auto-upgrade ones move to it; pinned ones stay on their build (`unversioned`: back to unversioned workers)',
    flags: {
      deployment,
      'allow-no-pollers': { help: 'even if no worker of the build has polled (it gets work once one does)' },
    },
    positionals: { kind: 'one', what: 'build id', shown: '<build id>|unversioned' },
    build: ({ flags, args }): DeployCommand => ({
      kind: 'deploy-set-current',
      ...(flags.deployment !== undefined ? { deployment: flags.deployment } : {}),
      buildId: args[0] === UNVERSIONED ? null : buildIdOf(args[0]),
      allowNoPollers: flags['allow-no-pollers'] === true,
    }),
    run: async (c) => (await deploys()).deployCommand(c),
  }),
  command({
    path: ['deploy', 'ramp'],
    summary:
      'send a share of new workflows (and of auto-upgrade ones) to a build before making it current; 0 ends the ramp',
    flags: { deployment },
    positionals: { kind: 'exactly', names: ['a build id', 'a percentage'], shown: '<build id> <percent>' },
    build: ({ flags, args }): DeployCommand => ({
      kind: 'deploy-ramp',
      ...(flags.deployment !== undefined ? { deployment: flags.deployment } : {}),
      buildId: buildIdOf(args[0]),
      percent: percentOf(args[1]),
    }),
    run: async (c) => (await deploys()).deployCommand(c),
  }),
  command({
    path: ['deploy', 'delete'],
    summary: 'forget a drained build whose workers have stopped (the server refuses anything else)',
    flags: { deployment },
    positionals: buildIdArg,
    build: ({ flags, args }): DeployCommand => ({
      kind: 'deploy-delete',
      ...(flags.deployment !== undefined ? { deployment: flags.deployment } : {}),
      buildId: buildIdOf(args[0]),
    }),
    run: async (c) => (await deploys()).deployCommand(c),
  }),
];

/** `agent deploy set-current unversioned`: new work to the workers without a deployment. */
const UNVERSIONED = 'unversioned';

function buildIdOf(text: string): string {
  const problem = buildIdProblem(text);
  if (problem) throw new UsageError(problem);
  return text;
}

function percentOf(text: string): number {
  const value = Number(text.replace(/%$/, ''));
  if (!/^\d+(\.\d+)?%?$/.test(text) || value > 100)
    throw new UsageError(`${JSON.stringify(text)} is not a percentage from 0 to 100`);
  return value;
}

/** Command groups: the first word of a subcommand, and what `agent <group>` alone does. */
export const GROUPS: Record<string, { summary: string; bare: 'help' | 'error' }> = {
  session: { summary: 'sessions', bare: 'error' },
  fact: { summary: "a session's global facts", bare: 'error' },
  task: { summary: 'overnight coding tasks', bare: 'error' },
  schedule: { summary: 'coding tasks on Temporal Schedules', bare: 'error' },
  sandbox: { summary: "this host's sandboxes", bare: 'help' },
  pr: { summary: 'pull requests the harness looks after', bare: 'help' },
  webhook: { summary: "forges' webhooks", bare: 'help' },
  forge: { summary: 'forges without webhooks', bare: 'help' },
  deploy: { summary: 'Worker Versioning: rolling out a new build of the workflow code', bare: 'help' },
};

/** Every command, in the order of `agent --help`. */
export const COMMANDS: ReadonlyArray<TableEntry<AgentCommand>> = [
  RUN,
  ...SESSION,
  EVENTS,
  APPROVE,
  ...FACT,
  ...OPERATION,
  ...REWIND,
  ...TASKS,
  ...PULL_REQUESTS,
  ...PROCESSES,
  ...SANDBOX,
  ...OPS,
  ...DEPLOY,
];
