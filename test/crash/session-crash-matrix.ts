/**
 * The crash matrix at session boundaries: a session whose first operation runs a `never` tool, takes a
 * follow-up queued behind it, waits for an approval and runs an approved `never` tool, after which the
 * follow-up runs one more. The worker (the real `agent worker dev`, in crash test mode) is killed at a
 * named boundary; a supervisor restarts it; the client retries every call (with the same Update id
 * for prompts) until it is answered. Each `never` tool appends one line to an effects file.
 */
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Client } from '@temporalio/client';
import { decideToolCall } from '../../client/approvals';
import { operationResult } from '../../client/operation-result';
import { readSession, Refused, submitPrompt } from '../../client/session';
import { getEvents } from '../../client/session-events';
import { statusQuery, type OperationResult } from '../../common/operation';
import { containerNameOf, volumeNameOf } from '../../common/sandbox-names';
import { sessionWorkflowId, type OperationIndexEntry } from '../../common/session';
import { PROJECT_ROOT } from '../../platform/paths';
import type { ScriptedModelServer } from '../../scripted-model/server';
import type { ScriptFunction } from '../../scripted-model/script';
import { conversations } from '../support/conversations';
import { testPlatform } from '../support/env';
import { removeSandboxes } from '../support/hands';
import { agentProcessArgs } from '../support/compiled-entries';
import { keepOrRemoveLogs } from '../support/crash-logs';

/** Lines the `never` (bash) tools append; each must appear exactly once. */
const execFileAsync = promisify(execFile);

export const SESSION_EFFECTS = ['effect-1', 'effect-2', 'effect-3'];
const FIRST = 'crash session: first prompt';
const SECOND = 'crash session: follow-up';
const APPROVAL_CALL = 'toolu_cs_02';

export function sessionCrashScript(): ScriptFunction {
  return conversations({
    [FIRST]: [
      {
        text: 'First effect, then wait for the go-ahead.',
        toolCalls: [
          {
            id: 'toolu_cs_01',
            name: 'bash',
            input: {
              command: `echo ${SESSION_EFFECTS[0]} >> /workspace/effects.log; while [ ! -f /workspace/release ]; do sleep 0.05; done`,
            },
          },
        ],
      },
      {
        text: 'This one needs approval.',
        toolCalls: [
          {
            id: APPROVAL_CALL,
            name: 'bash',
            input: { command: `echo ${SESSION_EFFECTS[1]} >> /workspace/effects.log` },
          },
        ],
      },
      { text: 'First done.' },
    ],
    [SECOND]: [
      {
        toolCalls: [
          {
            id: 'toolu_cs_03',
            name: 'bash',
            input: { command: `echo ${SESSION_EFFECTS[2]} >> /workspace/effects.log` },
          },
        ],
      },
      { text: 'Follow-up done.' },
    ],
  });
}

/** The session boundaries a crash matrix kills the worker at. */
export const isSessionBoundary = (name: string): boolean =>
  name.startsWith('session: ') || name.startsWith('workflow: approval');

export interface SessionScenarioOptions {
  name: string;
  /** Kill the first worker the k-th time it reaches this boundary: `<name>#<k>`. */
  crashAtPoint?: string;
  /** Kill the restarted worker at its first boundary too. */
  crashAgainOnRecovery?: boolean;
}

export interface SessionScenarioOutcome {
  results: OperationResult[];
  operations: OperationIndexEntry[];
  /** The session's sandbox state at the end (`removed`: the idle container went, the volume stays). */
  sandbox: string;
  effects: string[];
  /** `prompt.accepted` and `approval.decided` events in the session log. */
  promptsAccepted: number;
  approvalsDecided: number;
  boundaries: string[][];
  crashes: number;
  /** Each worker that ran, in order: its crash plan, the boundaries it passed and how it exited. */
  workers: string[];
  wallMs: number;
}

export class SessionCrashMatrix {
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'session-crash-matrix-'));

  constructor(
    private readonly client: Client,
    private readonly model: ScriptedModelServer,
  ) {}

  async run(options: SessionScenarioOptions): Promise<SessionScenarioOutcome> {
    const started = Date.now();
    const sessionId = `cs-${options.name}-${process.pid}`;
    const queues = { brain: `${sessionId}-brain`, hands: `${sessionId}-hands` };
    const workers = new Supervisor(this.dir, sessionId, queues, this.model.url, options);
    workers.start();
    try {
      const submit = (prompt: string, updateId: string) =>
        retry(() =>
          submitPrompt(this.client, {
            sessionId,
            prompt: { prompt, ...(prompt === FIRST ? { approvals: { 'bash:/effect-2/': 'ask' } } : {}) },
            session: { handsTaskQueue: queues.hands, defaults: { heartbeatTimeoutMs: 3_000 } },
            taskQueue: queues.brain,
            updateId,
            workflowTaskTimeout: '3 seconds',
          }),
        );
      const first = await submit(FIRST, `${sessionId}-first`);
      // One exec that waits inside the container, not one per poll: the matrix runs CPU-bound.
      await retry(async () => {
        const wait = `until grep -qx ${SESSION_EFFECTS[0]} /workspace/effects.log 2>/dev/null; do sleep 0.05; done`;
        const container = containerNameOf(sessionId);
        await execFileAsync('docker', ['exec', '-u', AGENT_USER, container, 'timeout', '120', 'bash', '-c', wait]);
        return true;
      });
      const second = await submit(SECOND, `${sessionId}-second`);
      await retry(async () => {
        await execFileAsync('docker', [
          'exec',
          '-u',
          AGENT_USER,
          containerNameOf(sessionId),
          'touch',
          '/workspace/release',
        ]);
        return true;
      });
      const op = this.client.workflow.getHandle(first.operationId);
      await retry(async () => (await op.query(statusQuery)).waitingApproval?.toolCallId === APPROVAL_CALL);
      await retry(async () => {
        try {
          await decideToolCall(this.client.workflow, {
            operationId: first.operationId,
            toolCallId: APPROVAL_CALL,
            approve: true,
          });
        } catch (err) {
          // An earlier try was accepted before its answer was lost with the worker.
          if (!(err instanceof Refused && err.type === 'ApprovalAlreadyDecided')) throw err;
        }
        return true;
      });
      const results = [
        await operationResult(op),
        await retry(async () => {
          await this.client.workflow.getHandle(second.operationId).describe();
          return operationResult(this.client.workflow.getHandle(second.operationId));
        }),
      ];
      // The session removes its idle container once both operations have ended (a boundary too).
      const session = await retry(async () => {
        const read = await readSession(this.client, sessionId);
        return read.sandbox.state === 'removed' && read;
      });
      const { events } = await getEvents(this.client, { kind: 'session', sessionId });
      const effects = this.effects(sessionId);
      await workers.stop();
      return {
        results,
        operations: session.operations,
        sandbox: session.sandbox.state,
        effects,
        promptsAccepted: events.filter((e) => e.type === 'prompt.accepted').length,
        approvalsDecided: events.filter((e) => e.type === 'approval.decided').length,
        boundaries: workers.boundaries,
        crashes: workers.crashes,
        workers: workers.exits.filter(Boolean),
        wallMs: Date.now() - started,
      };
    } finally {
      await workers.stop();
      await this.client.workflow
        .getHandle(sessionWorkflowId(sessionId))
        .terminate('crash matrix scenario finished')
        .catch(() => undefined);
      // The container, the workspace and journal volumes and the workspace's disk image.
      await removeSandboxes([sessionId]).catch(() => undefined);
    }
  }

  /** The effects file, read from the session's volume (the container may already be gone). */
  private effects(sessionId: string): string[] {
    try {
      return execFileSync(
        'docker',
        [
          'run',
          '--rm',
          '--network',
          'none',
          '-v',
          `${volumeNameOf(sessionId)}:/workspace:ro`,
          '--entrypoint',
          'cat',
          testPlatform().sandboxImage,
          '/workspace/effects.log',
        ],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
      )
        .split('\n')
        .filter(Boolean);
    } catch {
      return [];
    }
  }

  /** Removes the workers' logs, unless `keepLogs` (a failed run) says where they stay. */
  cleanup(keepLogs = false): void {
    keepOrRemoveLogs(this.dir, keepLogs);
  }
}

/** Runs the worker process in crash test mode and starts the next one whenever it dies. */
class Supervisor {
  readonly boundaries: string[][] = [];
  /** Each worker that exited, in order: its crash plan, the boundaries it passed and how it exited. */
  readonly exits: string[] = [];
  crashes = 0;
  private current: ChildProcess | undefined;
  private finished = false;

  constructor(
    private readonly dir: string,
    private readonly id: string,
    private readonly queues: { brain: string; hands: string },
    private readonly modelUrl: string,
    private readonly options: SessionScenarioOptions,
  ) {}

  start(index = 0): void {
    const log = path.join(this.dir, `${this.id}-worker-${index}.boundaries`);
    fs.writeFileSync(log, '');
    const crash =
      index === 0 && this.options.crashAtPoint
        ? { AGENT_CRASH_AT_POINT: this.options.crashAtPoint }
        : index === 1 && this.options.crashAgainOnRecovery
          ? { AGENT_CRASH_AT: '1' }
          : {};
    const out = fs.openSync(path.join(this.dir, `${this.id}-worker-${index}.log`), 'w');
    const child = spawn(
      // node itself, not the tsx command: that would run a second node process per worker.
      process.execPath,
      agentProcessArgs('worker', 'dev'),
      {
        cwd: PROJECT_ROOT,
        env: {
          ...process.env,
          TEMPORAL_ADDRESS: testPlatform().temporalAddress,
          TEMPORAL_NAMESPACE: testPlatform().namespace,
          ANTHROPIC_API_KEY: 'session-crash-matrix',
          ANTHROPIC_BASE_URL: this.modelUrl,
          AGENT_MODEL: 'scripted-model',
          AGENT_BRAIN_QUEUE: this.queues.brain,
          AGENT_HANDS_QUEUE: this.queues.hands,
          AGENT_WORKFLOW_BUNDLE: testPlatform().workflowBundlePath,
          AGENT_SANDBOX_IMAGE: testPlatform().sandboxImage,
          AGENT_CRASH_LOG: log,
          ...crash,
        },
        stdio: ['ignore', out, out],
      },
    );
    fs.closeSync(out);
    child.on('exit', (code, signal) => {
      this.boundaries[index] = fs
        .readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split('\t')[1]);
      const plan = Object.values(crash)[0];
      this.exits[index] =
        `worker ${index} (${plan === undefined ? 'no crash planned' : `crash at ${plan}`}): ` +
        `passed ${this.boundaries[index].length}, ${signal ?? `exit ${code}`}`;
      if (Object.keys(crash).length > 0 && !this.finished) this.crashes += 1;
      if (!this.finished) this.start(index + 1);
    });
    this.current = child;
  }

  async stop(): Promise<void> {
    this.finished = true;
    const child = this.current;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

/** Retries `fn` (which may throw or be falsy while no worker is up) until it returns a value. */
async function retry<T>(fn: () => Promise<T>, timeoutMs = 240_000): Promise<Exclude<T, false>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const value = await fn();
      if (value !== false) return value as Exclude<T, false>;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    if (Date.now() > deadline) throw new Error('timed out waiting for the session scenario');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
