/**
 * `seedWorkspace`: copies a repository into the session's workspace once. The source is checked
 * first (`seed-source.ts`: allowed roots, allowed URL forms). A local directory is read on the host;
 * a git URL is cloned on the host (the host's credentials stay there). Either way the files reach
 * the sandbox as a tar stream owned by the agent's uid, with every credential stripped from the git
 * configuration (`git-credentials.ts`). A directory that is not a repository of its own gets a
 * baseline commit so the operation's changes can be diffed. A record in the journal store (out of the
 * agent's reach) makes a second call return the first call's result without copying again.
 *
 * `checkSeedSource` is the same check as an activity of its own: the operation runs it before its
 * first model call, so a bad path fails the operation before any model call is paid for.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import * as tar from 'tar-stream';
import {
  HANDS_FAILURE_TYPES,
  type CheckSeedSourceInput,
  type SeedResult,
  type SeedSource,
  type SeedSourceCheck,
  type SeedWorkspaceInput,
} from '../../common/hands';
import { currentActivity, Heartbeat } from '../heartbeat';
import { repositoryHooksOf } from '../hooks/repository-hooks';
import { sessionOf, type HandsContext } from './deps';
import { handsFailure, toActivityFailure } from './failures';
import { isGitConfigFile, scrubGitConfig } from './git-credentials';
import { JOURNAL_WRITER, SEED_RECORD } from './journal-store';
import { SandboxError } from './docker-calls';
import { AGENT_UID } from './sandbox-spec';
import { checkSeedSource, redactUserinfo, type CheckedSeedSource } from './seed-source';

const execFileAsync = promisify(execFile);

const READ_SEED_RECORD = 'cat "$1" 2>/dev/null || true';
const WRITE_SEED_RECORD = 'mkdir -p "${1%/*}" && printf "%s" "$2" > "$1.tmp" && mv -f "$1.tmp" "$1"';
const BASELINE_SCRIPT = [
  'set -e',
  'cd /workspace',
  'git init -q',
  'mkdir -p .git/info && echo ".agent/" >> .git/info/exclude',
  'git add -A',
  'git commit -q --allow-empty -m "baseline: the workspace as seeded"',
  'git rev-parse HEAD',
].join('\n');

/** The `checkSeedSource` activity: the source check alone, on the hands host, without a container. */
export async function checkSeedSourceActivity(
  hands: HandsContext,
  input: CheckSeedSourceInput,
): Promise<SeedSourceCheck> {
  const checked = checkSeedSource(input.source, hands.allowedRoots);
  // hooks: the repository's own, read from the source (never the workspace), where the worker allows them.
  const hooks = hands.repositoryHooks ? await repositoryHooksOf(checked) : undefined;
  return {
    resolved: checked.kind === 'local' ? checked.path : redactUserinfo(checked.url),
    ...(hooks ? { repositoryHooks: hooks } : {}),
  };
}

export async function seedWorkspace(hands: HandsContext, input: SeedWorkspaceInput): Promise<SeedResult> {
  const { lifecycle, commands } = hands.sandboxes;
  const sessionId = sessionOf(input);
  // Before any container exists: a source the hands may not read never gets one.
  const source = checkSeedSource(input.source, hands.allowedRoots);
  const heartbeat = new Heartbeat<Record<string, unknown>>(currentActivity(), hands.heartbeatEveryMs, {
    sessionId,
    seeding: true,
  });
  let cloneDir: string | undefined;
  try {
    await lifecycle.ensure(sessionId, { operationId: input.operationId });
    // The record, or where a version before the journal volume left it (`SEED_RECORD`): that one is
    // in the workspace, so it is read as the agent, not as root.
    const current = await commands.script(sessionId, READ_SEED_RECORD, [SEED_RECORD.path], { user: JOURNAL_WRITER });
    const found = current.stdout.length
      ? current
      : await commands.script(sessionId, READ_SEED_RECORD, [SEED_RECORD.legacyPath]);
    const recorded = found.stdout.toString('utf8').trim();
    if (recorded) {
      const previous = JSON.parse(recorded) as SeedResult;
      return { files: previous.files, bytes: previous.bytes, ...(previous.head ? { head: previous.head } : {}) };
    }
    let dir: string;
    if (source.kind === 'local') {
      dir = source.path;
    } else {
      cloneDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-seed-'));
      dir = await cloneRepository(source, cloneDir);
    }
    const files = await listSeedFiles(dir);
    const head = await gitOutput(dir, ['rev-parse', '--verify', '-q', 'HEAD']).catch(() => undefined);
    const counts = await uploadFiles(hands, sessionId, dir, files, () => heartbeat.merge({ packed: true }));
    let baseline: string | undefined;
    if (!files.some((file) => file.startsWith('.git/'))) {
      // Not a repository of its own: commit the seeded files as a baseline so the operation's
      // changes can be diffed and the agent can use git as it would anywhere else.
      const init = await commands.script(sessionId, BASELINE_SCRIPT, []);
      if (init.exitCode !== 0) {
        throw new SandboxError('failed', `could not create the baseline commit: ${init.stderr.trim().slice(0, 300)}`);
      }
      baseline = init.stdout.toString('utf8').trim() || undefined;
    }
    const result: SeedResult = { ...counts, ...((head ?? baseline) ? { head: head ?? baseline } : {}) };
    const record = { ...result, source: describeSource(input.source), at: new Date().toISOString() };
    const written = await commands.script(sessionId, WRITE_SEED_RECORD, [SEED_RECORD.path, JSON.stringify(record)], {
      user: JOURNAL_WRITER,
    });
    if (written.exitCode !== 0) {
      throw new SandboxError('failed', `could not record the seeding: ${written.stderr.trim().slice(0, 300)}`);
    }
    return result;
  } catch (err) {
    throw toActivityFailure(err);
  } finally {
    heartbeat.stop();
    if (cloneDir) fs.rmSync(cloneDir, { recursive: true, force: true });
  }
}

/** Streams the files into the sandbox's /workspace as one tar archive. */
async function uploadFiles(
  hands: HandsContext,
  sessionId: string,
  dir: string,
  files: string[],
  progress: () => void,
): Promise<{ files: number; bytes: number }> {
  const pack = tar.pack();
  const upload = hands.sandboxes.files.putArchive(sessionId, pack);
  try {
    const counts = await packFiles(pack, dir, files, progress);
    pack.finalize();
    await upload;
    return counts;
  } catch (err) {
    pack.destroy(err as Error);
    await upload.catch(() => undefined);
    throw err;
  }
}

async function gitOutput(dir: string, args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('git', ['-C', dir, ...args], { maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim();
}

/**
 * Clones on the host (the host's credentials stay on the host) and returns the clone directory.
 * The URL and ref were checked (`checkSeedSource`): neither can reach git as an option.
 */
async function cloneRepository(source: Extract<CheckedSeedSource, { kind: 'git' }>, into: string): Promise<string> {
  const { url, ref } = source;
  const dir = path.join(into, 'repo');
  try {
    // Never a password prompt on the worker's terminal (`env` adds the variable to the worker's environment).
    await execFileAsync('env', ['GIT_TERMINAL_PROMPT=0', 'git', 'clone', '--quiet', '--', url, dir]);
    if (ref) await execFileAsync('git', ['-C', dir, 'checkout', '--quiet', ref]);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? String(err);
    throw handsFailure(
      HANDS_FAILURE_TYPES.cloneFailed,
      `git clone ${redactUserinfo(url)}${ref ? ` (${ref})` : ''} failed: ${redactUserinfo(stderr.trim())}`,
    );
  }
  const clean = redactUserinfo(url);
  if (clean !== url) await execFileAsync('git', ['-C', dir, 'remote', 'set-url', 'origin', clean]);
  return dir;
}

function describeSource(source: SeedSource): string {
  return source.kind === 'local'
    ? `local:${source.path}`
    : `git:${redactUserinfo(source.url)}${source.ref ? `#${source.ref}` : ''}`;
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

/** Adds the files to the tar as uid/gid 1000 (parents first); git configuration loses every credential. */
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
      let content: Buffer = fs.readFileSync(full);
      if (isGitConfigFile(rel)) content = await scrubGitConfig(content, full, dir);
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
