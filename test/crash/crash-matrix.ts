/**
 * The crash matrix's machinery: a scripted operation that uses every tool kind, a worker run as a
 * child process (the workers of `agent worker dev`) in crash test mode, and a supervisor that
 * replaces the worker each time it dies, until the operation ends. The next worker is always
 * started ahead and stands by (`test/support/standby-worker.ts`): it takes over the moment the
 * previous one dies, and the first worker of the next scenario starts while this one runs, so the
 * matrix does not wait for processes to start. Scenarios share nothing but the Temporal server, the
 * Docker engine and the (stateless) scripted model, so several may run at once.
 */
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { ChildProcess, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type Anthropic from '@anthropic-ai/sdk';
import type { Client } from '@temporalio/client';
import { rebuildContextFromHistory } from '../../activities/brain/history-context';
import { operationResult } from '../../client/operation-result';
import { sendUntilAdmitted } from '../../client/update-admission';
import { OPERATION_WORKFLOW_TYPE, OperationResult, steerUpdate } from '../../common/operation';
import { PROJECT_ROOT } from '../../platform/paths';
import type { ScriptedModelServer } from '../../scripted-model/server';
import type { ScriptedRequest, ScriptedTurn } from '../../scripted-model/script';
import { testPlatform } from '../support/env';
import { containerNameOf } from '../../common/sandbox-names';
import { removeSandboxes } from '../support/hands';
import { standbyWorkerArgs } from '../support/compiled-entries';
import { keepOrRemoveLogs } from '../support/crash-logs';

const execFileAsync = promisify(execFile);

export const STEERING_TEXT = 'steering: keep the change minimal';
/** Lines the `never` (bash) tools append to the effects file; each must appear at most once. */
export const EFFECTS = ['effect-bash-1', 'effect-bash-2'];
export const SYNTHETIC_MARK = '[interrupted:';

/**
 * The operation: every tool kind, two `never` tools with a countable side effect, and a tool call
 * that waits for the test to send steering. Turns are chosen by the number of assistant messages in
 * the request and tool-use ids are fixed, so a retried request gets the same answer.
 */
const TURNS: ScriptedTurn[] = [
  { text: 'Looking at the sources.', toolCalls: [{ id: 'toolu_cm_01', name: 'list_files', input: { path: 'src' } }] },
  {
    text: 'Recording the first effect, then waiting for the go-ahead.',
    toolCalls: [
      {
        id: 'toolu_cm_02',
        name: 'bash',
        input: {
          command: `echo ${EFFECTS[0]} >> /workspace/effects.log; while [ ! -f /workspace/release ]; do sleep 0.05; done; echo released`,
        },
      },
    ],
  },
  {
    text: 'Reading and fixing.',
    toolCalls: [
      { id: 'toolu_cm_03', name: 'read_file', input: { path: 'src/math.js', offset: 8, limit: 4 } },
      {
        id: 'toolu_cm_04',
        name: 'edit_file',
        input: {
          path: 'src/math.js',
          old_text: 'sum(values) / (values.length - 1)',
          new_text: 'sum(values) / values.length',
        },
      },
    ],
  },
  {
    text: 'Writing notes and searching.',
    toolCalls: [
      { id: 'toolu_cm_05', name: 'write_file', input: { path: 'NOTES.md', content: 'average divides by the count\n' } },
      { id: 'toolu_cm_06', name: 'grep', input: { pattern: 'values.length', path: 'src' } },
    ],
  },
  {
    text: 'Running the tests.',
    toolCalls: [
      {
        id: 'toolu_cm_07',
        name: 'bash',
        input: { command: `echo ${EFFECTS[1]} >> /workspace/effects.log; npm test 2>&1 | grep -E '^# (pass|fail)'` },
      },
    ],
  },
  { text: 'Done: average now divides by the number of values.' },
];

export function crashMatrixScript(request: ScriptedRequest): ScriptedTurn | undefined {
  const assistantTurns = request.body.messages.filter((m) => m.role === 'assistant').length;
  return TURNS[assistantTurns];
}

export interface ScenarioOptions {
  name: string;
  /** Crash the first worker at this boundary (1-based); none when undefined. */
  crashAt?: number;
  /** Crash the restarted worker at its first boundary too. */
  crashAgainOnRecovery?: boolean;
}

export interface ScenarioOutcome {
  result: OperationResult;
  /** Terminal workflow status as Temporal reports it. */
  status: string;
  transcript: Anthropic.MessageParam[];
  /** Lines of the effects file. */
  effects: string[];
  /** Boundaries each worker passed, in order (worker 0 first). */
  boundaries: string[][];
  /** How many workers died of a crash point. */
  crashes: number;
  /** Each worker that ran, in order: its crash plan, the boundaries it passed and how it exited. */
  workers: string[];
  wallMs: number;
}

/** A worker process of a scenario: the `index`-th to run, crashing at `crashAt` (none when undefined). */
interface WorkerProcess {
  child: ChildProcess;
  index: number;
  crashAt?: number;
  /** Its crash log: one line per boundary passed. */
  log: string;
  /** How it exited (`SIGKILL`, `exit 1`), once it has. */
  exit?: string;
  /** Resolves when its workers are built and it waits for `go`. */
  ready: Promise<void>;
}

export class CrashMatrix {
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crash-matrix-'));
  /** First workers of scenarios still to run, already standing by. */
  private readonly prepared = new Map<string, WorkerProcess>();
  /** Scenarios already run or running: a late `prepare` for one of them starts nothing. */
  private readonly started = new Set<string>();

  constructor(
    private readonly client: Client,
    private readonly model: ScriptedModelServer,
  ) {}

  /** Starts the first worker of a scenario that runs later, so that it stands by when it does. */
  prepare(options: ScenarioOptions): void {
    if (!this.prepared.has(options.name) && !this.started.has(options.name))
      this.prepared.set(options.name, this.spawnWorker(options, 0));
  }

  async run(options: ScenarioOptions): Promise<ScenarioOutcome> {
    const started = Date.now();
    this.started.add(options.name);
    const { id, queues } = scenarioNames(options);
    const boundaries: string[][] = [];
    let crashes = 0;
    let finished = false;
    const standing: WorkerProcess[] = [];
    const ran: WorkerProcess[] = [];
    let current: WorkerProcess | undefined;

    // Runs `worker` now and, when it is planned to crash, keeps the one after it standing by; when it
    // dies, the standby takes over (a worker that died unplanned is replaced by one started then).
    const activate = (worker: WorkerProcess): void => {
      current = worker;
      if (worker.crashAt !== undefined) standing.push(this.spawnWorker(options, worker.index + 1));
      worker.child.once('exit', (code, signal) => {
        worker.exit = signal ?? `exit ${code}`;
        ran.push(worker);
        boundaries[worker.index] = readBoundaries(worker.log);
        // The worker killed itself exactly when it reached its crash point: the count of boundaries
        // passed is the witness.
        if (worker.crashAt !== undefined && boundaries[worker.index].length === worker.crashAt) crashes += 1;
        if (!finished) activate(standing.shift() ?? this.spawnWorker(options, worker.index + 1));
      });
      void worker.ready.then(() => worker.child.connected && worker.child.send({ type: 'go' }));
    };

    const first = this.prepared.get(options.name) ?? this.spawnWorker(options, 0);
    this.prepared.delete(options.name);
    activate(first);
    try {
      const handle = await this.client.workflow.start(OPERATION_WORKFLOW_TYPE, {
        taskQueue: queues.brain,
        workflowId: id,
        workflowTaskTimeout: '3 seconds',
        args: [
          {
            goal: 'Fix the failing test.',
            sessionId: id,
            repo: { kind: 'local', path: path.join(PROJECT_ROOT, 'examples', 'calculator') },
            handsTaskQueue: queues.hands,
            heartbeatTimeoutMs: 3_000,
            keepContainer: true,
          },
        ],
      });
      // Steering goes in while the second turn's tool runs (its process has written its effect), so
      // it always joins the same checkpoint and its boundary always comes after the process start.
      // One exec that waits inside the container, not one per poll: the matrix runs CPU-bound.
      await until(async () => {
        const wait = `until grep -qx ${EFFECTS[0]} /workspace/effects.log 2>/dev/null; do sleep 0.05; done`;
        await execFileAsync('docker', ['exec', containerNameOf(id), 'timeout', '120', 'bash', '-c', wait]);
        return true;
      });
      await sendUntilAdmitted(
        (updateId) => handle.executeUpdate(steerUpdate, { args: [{ text: STEERING_TEXT }], updateId }),
        { timeoutMs: 180_000 },
      );
      await until(async () => {
        await execFileAsync('docker', ['exec', '-u', AGENT_USER, containerNameOf(id), 'touch', '/workspace/release']);
        return true;
      });
      const result = await operationResult(handle);
      const description = await handle.describe();
      const context = await rebuildContextFromHistory(this.client, id, description.runId);
      const effects = (
        await execFileAsync('docker', ['exec', containerNameOf(id), 'cat', '/workspace/effects.log'])
      ).stdout
        .split('\n')
        .filter(Boolean);
      finished = true;
      await stop(current!.child);
      return {
        result,
        status: description.status.name,
        transcript: context.messages,
        effects,
        boundaries,
        crashes,
        // Every worker that ran has exited by now (the last one was just stopped).
        workers: ran.map(
          (worker) =>
            `worker ${worker.index} (${worker.crashAt === undefined ? 'no crash planned' : `crash at ${worker.crashAt}`}): ` +
            `passed ${boundaries[worker.index]!.length}, ${worker.exit}`,
        ),
        wallMs: Date.now() - started,
      };
    } finally {
      finished = true;
      for (const worker of [current, ...standing]) if (worker) await stop(worker.child);
      await removeSandboxes([id]).catch(() => undefined);
    }
  }

  /** Starts the `index`-th worker of a scenario, standing by until it is sent `go`. */
  private spawnWorker(options: ScenarioOptions, index: number): WorkerProcess {
    const { id, queues } = scenarioNames(options);
    const plans: Array<number | undefined> = [options.crashAt, options.crashAgainOnRecovery ? 1 : undefined];
    const crashAt = plans[index];
    const log = path.join(this.dir, `${id}-worker-${index}.boundaries`);
    fs.writeFileSync(log, '');
    const out = fs.openSync(path.join(this.dir, `${id}-worker-${index}.log`), 'w');
    const child = spawn(process.execPath, standbyWorkerArgs(), {
      cwd: PROJECT_ROOT,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: testPlatform().temporalAddress,
        TEMPORAL_NAMESPACE: testPlatform().namespace,
        ANTHROPIC_API_KEY: 'crash-matrix',
        ANTHROPIC_BASE_URL: this.model.url,
        AGENT_MODEL: 'scripted-model',
        AGENT_BRAIN_QUEUE: queues.brain,
        AGENT_HANDS_QUEUE: queues.hands,
        AGENT_WORKFLOW_BUNDLE: testPlatform().workflowBundlePath,
        AGENT_SANDBOX_IMAGE: testPlatform().sandboxImage,
        AGENT_CRASH_LOG: log,
        AGENT_CRASH_AT: String(crashAt ?? 0),
      },
      stdio: ['ignore', out, out, 'ipc'],
    });
    fs.closeSync(out);
    const ready = new Promise<void>((resolve) => {
      child.on('message', (message: { type?: string }) => message?.type === 'ready' && resolve());
    });
    return { child, index, crashAt, log, ready };
  }

  /** Stops the workers still standing by and removes the workers' logs, unless `keepLogs` (a failed run) says where they stay. */
  cleanup(keepLogs = false): void {
    for (const worker of this.prepared.values()) worker.child.kill('SIGKILL');
    this.prepared.clear();
    keepOrRemoveLogs(this.dir, keepLogs);
  }
}

function scenarioNames(options: ScenarioOptions): { id: string; queues: { brain: string; hands: string } } {
  const id = `cm-${options.name}-${process.pid}`;
  return { id, queues: { brain: `${id}-brain`, hands: `${id}-hands` } };
}

function readBoundaries(log: string): string[] {
  return fs
    .readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split('\t')[1]);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Retries `check` (which may throw while no worker is up) until it returns true. */
async function until(check: () => Promise<boolean>, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // No worker right now, or the container is being replaced: try again.
    }
    if (Date.now() > deadline) throw new Error('timed out waiting for the operation');
    // Each try may be a `docker exec` (a few processes' CPU); a quarter second is soon enough.
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Tool results that differ from the reference run are allowed only when marked synthetic. */
export function transcriptDifferences(reference: Anthropic.MessageParam[], actual: Anthropic.MessageParam[]): string[] {
  const problems: string[] = [];
  if (reference.length !== actual.length) problems.push(`${actual.length} messages instead of ${reference.length}`);
  for (let i = 0; i < Math.min(reference.length, actual.length); i++) {
    const want = blocks(reference[i]);
    const got = blocks(actual[i]);
    if (want.length !== got.length) {
      problems.push(`message ${i}: ${got.length} blocks instead of ${want.length}`);
      continue;
    }
    want.forEach((block, j) => {
      const other = got[j];
      if (JSON.stringify(block) === JSON.stringify(other)) return;
      const synthetic =
        other.type === 'tool_result' && block.type === 'tool_result' && resultText(other).startsWith(SYNTHETIC_MARK);
      if (!synthetic) problems.push(`message ${i} block ${j} differs: ${JSON.stringify(other).slice(0, 200)}`);
    });
  }
  return problems;
}

const blocks = (message: Anthropic.MessageParam): Anthropic.ContentBlockParam[] =>
  typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;

function resultText(block: Anthropic.ContentBlockParam): string {
  if (block.type !== 'tool_result') return '';
  if (typeof block.content === 'string') return block.content;
  return (block.content ?? []).map((part) => (part.type === 'text' ? part.text : '')).join('');
}
