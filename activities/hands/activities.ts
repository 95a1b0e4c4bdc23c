/**
 * The hands as Temporal activities: run one tool call in a sandbox, seed a workspace, diff it, destroy
 * a sandbox. Built by `createHandsActivities` from a `SandboxManager` (all Docker access goes through it).
 *
 * Error contract: tool failures (non-zero exit, file not found, an edit that does not match) are
 * results with `isError`, never exceptions. Only infrastructure failures throw, as ApplicationFailures
 * with a `type`: `SandboxUnavailable` (Docker did not answer; retryable), `SandboxLost` (the container
 * went away mid-call; retryable), `SandboxFailed` (retryable), `SandboxImageMissing` and
 * `InvalidToolInput` (non-retryable). Cancellation kills the call's process group, journals it, and
 * rethrows the activity's CancelledFailure.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import * as tar from 'tar-stream';
import {
  replayPolicyOf,
  toolSummary,
  validateToolCall,
  type ReplayPolicy,
  type ToolInput,
  type ToolName,
} from '../../common/tools';
import { AGENT_DIR, decideReplay, journalFor, outputPathOf, runBaseOf } from './journal';
import { shapeOutput, spillOptions, type Spill } from './output';
import { crashPoint } from '../crash-points';
import { AGENT_UID, SandboxError, type ExecOptions, type ExecResult, type SandboxManager } from './sandbox-manager';
import { HANDS_TOOLS } from './tools';
import type { HandsTool, ToolContext, ToolResult } from './tools/types';

const execFileAsync = promisify(execFile);

export interface RunToolInput {
  sandboxId: string;
  operationId?: string;
  /** The model's tool_use id: the key of the journal, the run directory and the output file. */
  toolCallId: string;
  name: string;
  /** Already validated by the workflow; validated again here. */
  input: unknown;
  /** The call's time budget; `bash` uses min(timeout_ms, this), other tools at most 60 s. */
  timeoutMs?: number;
}

export interface ToolOutcome {
  /** The tool_result content for the model. */
  content: string;
  isError: boolean;
  /** True when the hands made the result up (an interrupted `never` call) instead of running the tool. */
  synthetic: boolean;
  exitCode?: number;
  /** Why the sandbox container was replaced before this call (also stated in `content`). */
  sandboxReplaced?: string;
  /** Where the full output went when it was too long to return whole. */
  spill?: Spill;
}

export type SeedSource = { kind: 'local'; path: string } | { kind: 'git'; url: string; ref?: string };

export interface SeedWorkspaceInput {
  sandboxId: string;
  operationId?: string;
  source: SeedSource;
}

export interface SeedResult {
  files: number;
  bytes: number;
  /** The commit checked out, when the source is a git repository with commits. */
  head?: string;
}

export interface HandsActivities {
  runTool(input: RunToolInput): Promise<ToolOutcome>;
  seedWorkspace(input: SeedWorkspaceInput): Promise<SeedResult>;
  workspaceDiff(input: { sandboxId: string }): Promise<{ diff: string; stat: string }>;
  destroySandbox(input: { sandboxId: string; keepVolume: boolean }): Promise<void>;
  /** Creates the sandbox now (eager provisioning); a no-op when it is already running. */
  ensureSandbox(input: { sandboxId: string; operationId?: string }): Promise<{ created: boolean; replaced?: string }>;
}

export interface HandsActivitiesDeps {
  manager: SandboxManager;
  /** Output above this many bytes is spilled to a file (default 16 KiB). */
  spillThresholdBytes?: number;
  /** Output above this many lines is spilled to a file (default 400). */
  spillThresholdLines?: number;
  /** Most bytes of a command's output kept in the workspace (default 8 MiB); the rest is counted and dropped. */
  outputCaptureBytes?: number;
  /** How often a running activity heartbeats (default 1 s; the SDK throttles what it sends). */
  heartbeatIntervalMs?: number;
}

const TOOL_CALL_ID = /^[A-Za-z0-9_.-]{1,128}$/;
const SEED_MARKER = `${AGENT_DIR}/seeded`;
const BASELINE_SCRIPT = [
  'set -e',
  'cd /workspace',
  'git init -q',
  'mkdir -p .git/info && echo ".agent/" >> .git/info/exclude',
  'git add -A',
  'git commit -q --allow-empty -m "baseline: the workspace as seeded"',
  'git rev-parse HEAD',
].join('\n');
const DIFF_MAX_BYTES = 1024 * 1024;
const REPLAY_POLL_MS = 250;

export function createHandsActivities(deps: HandsActivitiesDeps): HandsActivities {
  const { manager } = deps;
  const spill = spillOptions(deps.spillThresholdBytes, deps.spillThresholdLines);
  const heartbeatEvery = deps.heartbeatIntervalMs ?? 1_000;

  async function runTool(input: RunToolInput): Promise<ToolOutcome> {
    const ctx = activityContext();
    if (typeof input.toolCallId !== 'string' || !TOOL_CALL_ID.test(input.toolCallId)) {
      throw ApplicationFailure.create({
        type: 'InvalidToolInput',
        nonRetryable: true,
        message: `invalid toolCallId ${JSON.stringify(input.toolCallId)}: use letters, digits, '_', '.', '-'`,
      });
    }
    const checked = validateToolCall(input.name, input.input);
    if (!checked.ok) return { content: checked.error, isError: true, synthetic: false };
    const name = input.name as ToolName;

    const beat = heartbeater(ctx, heartbeatEvery, { toolCallId: input.toolCallId, tool: name });
    try {
      let sandbox = await manager.ensure(input.sandboxId, { operationId: input.operationId });
      let replaced = sandbox.replaced;
      let call = await callTool({ ...input, name, input: checked.input }, ctx, beat);
      if (call.lost) {
        // The container died under the call: replace it; a `never` call then reports itself
        // interrupted (its journal shows it started), others run again once.
        sandbox = await manager.ensure(input.sandboxId, { operationId: input.operationId });
        replaced = sandbox.replaced ?? call.lost;
        call = await callTool({ ...input, name, input: checked.input }, ctx, beat);
        if (call.lost) throw new SandboxError('lost', call.lost);
      }
      const result = call.result!;
      const outcome: ToolOutcome = {
        content: replaced
          ? `[sandbox restarted: ${replaced}; /workspace is preserved]\n${result.content}`
          : result.content,
        isError: result.isError,
        synthetic: call.synthetic,
        ...(result.exitCode !== undefined ? { exitCode: result.exitCode } : {}),
        ...(replaced ? { sandboxReplaced: replaced } : {}),
        ...(result.spill ? { spill: result.spill } : {}),
      };
      return outcome;
    } catch (err) {
      throw toActivityFailure(err);
    } finally {
      beat.stop();
    }
  }

  /** One try at a tool call on the current container, honouring the journal for `never` tools. */
  async function callTool(
    call: RunToolInput & { name: ToolName; input: ToolInput<ToolName> },
    ctx: Context | undefined,
    beat: Heartbeater,
  ): Promise<{ result?: ToolResult; synthetic: boolean; lost?: string }> {
    const policy = replayPolicyOf(call.name);
    // The map is keyed by name, so each implementation receives its own input type.
    const tool = HANDS_TOOLS[call.name] as HandsTool<ToolInput<ToolName>>;
    const toolCtx: ToolContext = {
      toolCallId: call.toolCallId,
      spill,
      outputPath: outputPathOf(call.toolCallId),
      ...(call.timeoutMs !== undefined ? { timeoutMs: call.timeoutMs } : {}),
    };
    const prepared = tool.prepare(call.input, toolCtx);
    const signal = ctx?.cancellationSignal;
    if (signal?.aborted) await throwCancelled(ctx);
    if (prepared.files) await manager.putFiles(call.sandboxId, prepared.files);

    const journal = journalFor({
      toolCallId: call.toolCallId,
      tool: call.name,
      replayPolicy: policy,
      summary: toolSummary(call.name, call.input),
      command: prepared.journalCommand,
      ...(ctx ? { activityAttempt: ctx.info.attempt } : {}),
    });
    const options: ExecOptions = {
      command: prepared.command,
      ...(prepared.args ? { args: prepared.args } : {}),
      runBase: runBaseOf(call.toolCallId),
      timeoutMs: prepared.timeoutMs,
      ...(deps.outputCaptureBytes ? { maxOutputBytes: deps.outputCaptureBytes } : {}),
      outputLink: outputPathOf(call.toolCallId),
      journal,
      ...(signal ? { signal } : {}),
      onProcess: (process) => {
        crashPoint(`tool: process running (${call.name} ${call.toolCallId})`);
        beat.update({ pid: process.pid, attempt: process.attempt });
      },
    };

    if (policy !== 'never' && ctx && ctx.info.attempt > 1) {
      // A retry of a safe or idempotent call whose earlier attempt finished (its worker died before
      // the result was recorded) returns that attempt's result, so the transcript reads exactly as
      // if nothing had happened; one still running is awaited; one that never ran or died runs again.
      const earlier = await replayNever(call, 'never', prepared.timeoutMs, ctx, beat);
      if (earlier.kind === 'finished') {
        return {
          result: tool.format(
            { exit: earlier.run.exit, output: earlier.run.output, outputPath: earlier.run.outputPath },
            call.input,
            toolCtx,
          ),
          synthetic: false,
        };
      }
    }
    crashPoint(`tool: before process start (${call.name} ${call.toolCallId})`);
    let run: ExecResult = await manager.exec(call.sandboxId, options);
    crashPoint(`tool: after process end (${call.name} ${call.toolCallId})`);
    if (run.kind === 'journal-exists') {
      const replay = await replayNever(call, policy, prepared.timeoutMs, ctx, beat);
      if (replay.kind === 'run')
        run = await manager.exec(call.sandboxId, { ...options, journal: { ...journal, mode: 'append' } });
      else if (replay.kind === 'finished') run = replay.run;
      else return { result: interruptedResult(call, replay), synthetic: true };
    }
    if (run.kind === 'lost') return { lost: run.reason, synthetic: false };
    if (run.kind !== 'finished') throw new SandboxError('failed', 'the journal appeared while the call ran');
    if (run.exit.cancelled && signal?.aborted) await throwCancelled(ctx);
    return {
      result: tool.format({ exit: run.exit, output: run.output, outputPath: run.outputPath }, call.input, toolCtx),
      synthetic: false,
    };
  }

  type Replay =
    | { kind: 'run' }
    | { kind: 'finished'; run: Extract<ExecResult, { kind: 'finished' }> }
    | { kind: 'interrupted'; attempt: number; pid?: number; partialOutput: Buffer; startedAt?: string };

  /** A `never` call whose journal exists: return its recorded result, wait for it, or report it interrupted. */
  async function replayNever(
    call: RunToolInput,
    policy: ReplayPolicy,
    timeoutMs: number,
    ctx: Context | undefined,
    beat: Heartbeater,
  ): Promise<Replay> {
    const runBase = runBaseOf(call.toolCallId);
    const journalPath = journalFor({
      toolCallId: call.toolCallId,
      tool: call.name,
      replayPolicy: policy,
      summary: '',
      command: '',
    }).path;
    const deadline = Date.now() + timeoutMs + 15_000;
    for (;;) {
      const status = await manager.runStatus(call.sandboxId, runBase, journalPath);
      const decision = decideReplay(policy, status);
      switch (decision.action) {
        case 'run':
          return { kind: 'run' };
        case 'recorded': {
          const runDir = `${runBase}/${decision.attempt}`;
          const pid = decision.exit.pid;
          return {
            kind: 'finished',
            run: {
              kind: 'finished',
              exit: decision.exit,
              output: decision.output,
              process: { pid, pgid: pid, attempt: decision.attempt, runDir },
              outputPath: outputPathOf(call.toolCallId),
            },
          };
        }
        case 'interrupted':
          return {
            kind: 'interrupted',
            attempt: decision.attempt,
            partialOutput: decision.partialOutput,
            ...(decision.pid ? { pid: decision.pid } : {}),
            ...(decision.startedAt ? { startedAt: decision.startedAt } : {}),
          };
        case 'wait': {
          beat.update({ waitingFor: decision.pid ?? 'starting', attempt: status.attempt });
          if (ctx?.cancellationSignal.aborted) {
            if (decision.pid)
              await manager.kill(call.sandboxId, decision.pid, { runDir: `${runBase}/${status.attempt}` });
            await throwCancelled(ctx);
          }
          if (Date.now() > deadline) {
            return {
              kind: 'interrupted',
              attempt: status.attempt,
              partialOutput: status.output,
              ...(decision.pid ? { pid: decision.pid } : {}),
            };
          }
          await delay(REPLAY_POLL_MS);
        }
      }
    }
  }

  function interruptedResult(call: RunToolInput, replay: Extract<Replay, { kind: 'interrupted' }>): ToolResult {
    const who = `attempt ${replay.attempt}${replay.pid ? `, process ${replay.pid}` : ''}${replay.startedAt ? `, started ${replay.startedAt}` : ''}`;
    const lines = [
      `[interrupted: this ${call.name} call was already started (${who}) and was cut off before its result was recorded — the worker or the sandbox stopped. ` +
        'Its outcome is unknown: it may have run partly or completely. It was not run again. The workspace is preserved. ' +
        'Inspect the workspace (files, git status, processes) before deciding whether to run it again.]',
    ];
    if (replay.partialOutput.length) {
      const shaped = shapeOutput(replay.partialOutput, `${runBaseOf(call.toolCallId)}/${replay.attempt}/out`, spill);
      lines.push(
        `Partial output captured before the interruption (${replay.partialOutput.length} bytes):`,
        shaped.text.replace(/\n$/, ''),
      );
      return { content: lines.join('\n'), isError: true, ...(shaped.spill ? { spill: shaped.spill } : {}) };
    }
    lines.push('No output was captured.');
    return { content: lines.join('\n'), isError: true };
  }

  async function seedWorkspace(input: SeedWorkspaceInput): Promise<SeedResult> {
    const ctx = activityContext();
    const beat = heartbeater(ctx, heartbeatEvery, { sandboxId: input.sandboxId, seeding: true });
    let cloneDir: string | undefined;
    try {
      await manager.ensure(input.sandboxId, { operationId: input.operationId });
      const marker = await manager.script(input.sandboxId, 'cat "$1" 2>/dev/null || true', [SEED_MARKER]);
      const recorded = marker.stdout.toString('utf8').trim();
      if (recorded) {
        const previous = JSON.parse(recorded) as SeedResult;
        return { files: previous.files, bytes: previous.bytes, ...(previous.head ? { head: previous.head } : {}) };
      }
      let dir: string;
      if (input.source.kind === 'local') {
        dir = path.resolve(input.source.path);
        if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
          throw ApplicationFailure.create({
            type: 'InvalidSeedSource',
            nonRetryable: true,
            message: `seed source ${dir} is not a directory`,
          });
        }
      } else {
        cloneDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-seed-'));
        dir = await cloneRepository(input.source.url, input.source.ref, cloneDir);
      }
      const files = await listSeedFiles(dir);
      const head = await gitOutput(dir, ['rev-parse', '--verify', '-q', 'HEAD']).catch(() => undefined);
      const pack = tar.pack();
      const upload = manager.putArchive(input.sandboxId, pack);
      let counts: { files: number; bytes: number };
      try {
        counts = await packFiles(pack, dir, files, () => beat.update({ packed: true }));
        pack.finalize();
      } catch (err) {
        pack.destroy(err as Error);
        await upload.catch(() => undefined);
        throw err;
      }
      await upload;
      let baseline: string | undefined;
      if (!files.some((file) => file.startsWith('.git/'))) {
        // Not a repository of its own: commit the seeded files as a baseline so the operation's
        // changes can be diffed and the agent can use git as it would anywhere else.
        const init = await manager.script(input.sandboxId, BASELINE_SCRIPT, []);
        if (init.exitCode !== 0)
          throw new SandboxError('failed', `could not create the baseline commit: ${init.stderr.trim().slice(0, 300)}`);
        baseline = init.stdout.toString('utf8').trim() || undefined;
      }
      const result: SeedResult = { ...counts, ...((head ?? baseline) ? { head: head ?? baseline } : {}) };
      await manager.putFiles(input.sandboxId, [
        {
          path: SEED_MARKER,
          content: JSON.stringify({ ...result, source: describeSource(input.source), at: new Date().toISOString() }),
        },
      ]);
      return result;
    } catch (err) {
      throw toActivityFailure(err);
    } finally {
      beat.stop();
      if (cloneDir) fs.rmSync(cloneDir, { recursive: true, force: true });
    }
  }

  async function workspaceDiff(input: { sandboxId: string }): Promise<{ diff: string; stat: string }> {
    try {
      await manager.ensure(input.sandboxId);
      const { stdout, exitCode, stderr } = await manager.script(input.sandboxId, DIFF_SCRIPT);
      if (exitCode !== 0) throw new SandboxError('failed', `git diff failed: ${stderr.trim().slice(0, 300)}`);
      const text = stdout.toString('utf8');
      if (text.startsWith('@@not-git')) return { diff: '', stat: '(the workspace is not a git repository)' };
      const split = text.indexOf('@@diff\n');
      const stat = text.slice(0, split).trim();
      let diff = text.slice(split + '@@diff\n'.length);
      if (Buffer.byteLength(diff) > DIFF_MAX_BYTES) {
        diff = `${Buffer.from(diff).subarray(0, DIFF_MAX_BYTES).toString('utf8')}\n[diff truncated at ${DIFF_MAX_BYTES} bytes]\n`;
      }
      return { diff, stat };
    } catch (err) {
      throw toActivityFailure(err);
    }
  }

  async function destroySandbox(input: { sandboxId: string; keepVolume: boolean }): Promise<void> {
    try {
      await manager.remove(input.sandboxId, { keepVolume: input.keepVolume });
    } catch (err) {
      throw toActivityFailure(err);
    }
  }

  async function ensureSandbox(input: {
    sandboxId: string;
    operationId?: string;
  }): Promise<{ created: boolean; replaced?: string }> {
    try {
      const sandbox = await manager.ensure(input.sandboxId, { operationId: input.operationId });
      return { created: sandbox.created, ...(sandbox.replaced ? { replaced: sandbox.replaced } : {}) };
    } catch (err) {
      throw toActivityFailure(err);
    }
  }

  return { runTool, seedWorkspace, workspaceDiff, destroySandbox, ensureSandbox };
}

/** The diff of the workspace against HEAD, new files included, without touching the real index. */
const DIFF_SCRIPT = String.raw`
cd /workspace
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo '@@not-git'; exit 0; }
idx=$(mktemp) && rm -f "$idx" || exit 1
trap 'rm -f "$idx"' EXIT
gitdir=$(git rev-parse --git-dir)
[ -f "$gitdir/index" ] && cp "$gitdir/index" "$idx"
export GIT_INDEX_FILE=$idx
git add -A . >/dev/null 2>&1 || exit 1
base=$(git rev-parse --verify -q HEAD || git hash-object -t tree /dev/null)
git -c core.quotepath=off diff --cached --stat "$base"
echo '@@diff'
git -c core.quotepath=off diff --cached "$base"
`;

// ---- seeding helpers (host side) ----

async function gitOutput(dir: string, args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('git', ['-C', dir, ...args], { maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim();
}

/** Clones on the host (the host's credentials stay on the host) and returns the clone directory. */
async function cloneRepository(url: string, ref: string | undefined, into: string): Promise<string> {
  const dir = path.join(into, 'repo');
  try {
    await execFileAsync('git', ['clone', '--quiet', url, dir], { env: { ...process.env, GIT_TERMINAL_PROMPT: '0' } });
    if (ref) await execFileAsync('git', ['-C', dir, 'checkout', '--quiet', ref]);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? String(err);
    throw ApplicationFailure.create({
      type: 'SeedCloneFailed',
      nonRetryable: false,
      message: `git clone ${redactUrl(url)}${ref ? ` (${ref})` : ''} failed: ${redactUrl(stderr.trim())}`,
    });
  }
  const clean = redactUrl(url);
  if (clean !== url) await execFileAsync('git', ['-C', dir, 'remote', 'set-url', 'origin', clean]);
  return dir;
}

function redactUrl(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^@/\s]+@/gi, '$1');
}

function describeSource(source: SeedSource): string {
  return source.kind === 'local'
    ? `local:${source.path}`
    : `git:${redactUrl(source.url)}${source.ref ? `#${source.ref}` : ''}`;
}

/**
 * The files to seed, relative to `dir`: in a git work tree, tracked and untracked-but-not-ignored
 * files plus the whole `.git` directory (history kept); elsewhere every file except node_modules.
 */
export async function listSeedFiles(dir: string): Promise<string[]> {
  const top = await gitOutput(dir, ['rev-parse', '--show-toplevel']).catch(() => undefined);
  if (top && fs.realpathSync(top) === fs.realpathSync(dir)) {
    const { stdout } = await execFileAsync('git', ['-C', dir, 'ls-files', '-co', '--exclude-standard', '-z'], {
      maxBuffer: 256 * 1024 * 1024,
    });
    const listed = stdout.split('\0').filter(Boolean);
    const gitDir = path.join(dir, '.git');
    const history = fs.existsSync(gitDir) && fs.lstatSync(gitDir).isDirectory() ? walk(dir, '.git', () => true) : [];
    return [...history, ...listed];
  }
  return walk(dir, '', (name) => name !== 'node_modules');
}

function walk(root: string, rel: string, keep: (name: string) => boolean): string[] {
  const out: string[] = [];
  const entries = fs
    .readdirSync(path.join(root, rel), { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    if (!keep(entry.name)) continue;
    const child = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...walk(root, child, keep));
    else out.push(child);
  }
  return out;
}

/** Adds the files to the tar as uid/gid 1000 (parents first); `.git/config` loses URL credentials. */
async function packFiles(
  pack: tar.Pack,
  dir: string,
  files: string[],
  progress: () => void,
): Promise<{ files: number; bytes: number }> {
  const dirs = new Set<string>();
  let count = 0;
  let bytes = 0;
  let excludeSeen = false;
  const owner = { uid: AGENT_UID, gid: AGENT_UID, uname: 'agent', gname: 'agent' };
  const addDir = (rel: string) => {
    const parts = rel.split('/');
    for (let i = 1; i < parts.length; i++) {
      const d = parts.slice(0, i).join('/');
      if (dirs.has(d)) continue;
      dirs.add(d);
      pack.entry({ name: d, type: 'directory', mode: 0o755, mtime: new Date(), ...owner });
    }
  };
  const addBuffer = (name: string, content: Buffer, mode: number, mtime: Date) =>
    new Promise<void>((resolve, reject) =>
      pack.entry({ name, mode, mtime, size: content.length, ...owner }, content, (err) =>
        err ? reject(err) : resolve(),
      ),
    );

  for (const rel of files) {
    const full = path.join(dir, rel);
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(full);
    } catch {
      continue; // tracked but deleted in the work tree
    }
    if (stat.isDirectory()) continue; // a submodule's gitlink
    addDir(rel);
    if (stat.isSymbolicLink()) {
      pack.entry({
        name: rel,
        type: 'symlink',
        linkname: fs.readlinkSync(full),
        mode: 0o777,
        mtime: stat.mtime,
        ...owner,
      });
    } else if (stat.isFile()) {
      let content = fs.readFileSync(full);
      if (rel === '.git/config') content = Buffer.from(redactUrl(content.toString('utf8')));
      if (rel === '.git/info/exclude') {
        content = Buffer.concat([
          content,
          Buffer.from(`${content.length && content[content.length - 1] !== 0x0a ? '\n' : ''}.agent/\n`),
        ]);
        excludeSeen = true;
      }
      await addBuffer(rel, content, stat.mode & 0o777, stat.mtime);
      bytes += content.length;
    } else {
      continue;
    }
    count++;
    if (count % 200 === 0) progress();
  }
  if (dirs.has('.git') && !excludeSeen) {
    addDir('.git/info/exclude');
    await addBuffer('.git/info/exclude', Buffer.from('.agent/\n'), 0o644, new Date());
  }
  return { files: count, bytes };
}

// ---- activity plumbing ----

function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined; // called directly (tests, CLI), not as an activity
  }
}

interface Heartbeater {
  update(details: Record<string, unknown>): void;
  stop(): void;
}

function heartbeater(ctx: Context | undefined, everyMs: number, base: Record<string, unknown>): Heartbeater {
  if (!ctx) return { update() {}, stop() {} };
  let details = { ...base };
  ctx.heartbeat(details);
  const timer = setInterval(() => ctx.heartbeat(details), everyMs);
  return {
    update(more) {
      details = { ...details, ...more };
      ctx.heartbeat(details);
    },
    stop: () => clearInterval(timer),
  };
}

async function throwCancelled(ctx: Context | undefined): Promise<never> {
  if (ctx) await ctx.cancelled;
  throw new CancelledFailure('cancelled');
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Classifies an error once, at the activity boundary. */
function toActivityFailure(err: unknown): Error {
  if (err instanceof CancelledFailure || err instanceof ApplicationFailure) return err;
  if (err instanceof SandboxError) {
    switch (err.kind) {
      case 'unavailable':
        return ApplicationFailure.create({
          type: 'SandboxUnavailable',
          nonRetryable: false,
          message: err.message,
          cause: err,
        });
      case 'image-missing':
        return ApplicationFailure.create({
          type: 'SandboxImageMissing',
          nonRetryable: true,
          message: err.message,
          cause: err,
        });
      case 'invalid':
        return ApplicationFailure.create({
          type: 'InvalidToolInput',
          nonRetryable: true,
          message: err.message,
          cause: err,
        });
      case 'lost':
        return ApplicationFailure.create({
          type: 'SandboxLost',
          nonRetryable: false,
          message: err.message,
          cause: err,
        });
      case 'failed':
        return ApplicationFailure.create({
          type: 'SandboxFailed',
          nonRetryable: false,
          message: err.message,
          cause: err,
        });
    }
  }
  const message = err instanceof Error ? err.message : String(err);
  return ApplicationFailure.create({
    type: 'HandsError',
    nonRetryable: false,
    message,
    ...(err instanceof Error ? { cause: err } : {}),
  });
}
