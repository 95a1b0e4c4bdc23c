/**
 * `prepareRepository`: the host's bare clone of a task run (`<tasksDir>/<session>/repo.git`) with
 * the branch the run works on, and what the run needs to know before the sandbox exists: whether
 * the branch is new, the commit it starts from, its feature list and the specification.
 *
 * The branch continues where the remote has it; a new branch starts from the repository's `ref`
 * (a branch, tag or commit) or its default branch. Only what is needed is fetched.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FEATURE_LIST_FILE } from '../../common/feature-list';
import { REPO_FAILURE_TYPES, type PrepareRepositoryInput, type PrepareRepositoryResult } from '../../common/repo';
import { hostRepositoryOf, type RepoContext } from './deps';
import { repoFailure, toRepoFailure } from './failures';
import { git, gitOrFail, remoteTarget } from './host-git';
import { repositoryHooksAt } from '../hooks/repository-hooks';

const SPEC_MAX_BYTES = 200_000;

export async function prepareRepository(
  hostCtx: RepoContext,
  input: PrepareRepositoryInput,
): Promise<PrepareRepositoryResult> {
  try {
    const { remote, shown, env } = remoteTarget(hostCtx, input.repo);
    // A forge repository's token is offered to every git command of this call (and redacted from its messages).
    const ctx: RepoContext = { ...hostCtx, env };
    const dir = await ensureBareRepository(ctx, input.sessionId);
    const refs = await listRemoteRefs(ctx, remote, shown);
    const branchRef = `refs/heads/${input.branch}`;
    const branchExisted = refs.has(branchRef);
    const startRef = branchExisted ? branchRef : startingRef(refs, input, shown);
    const startCommit = await fetchStart(ctx, dir, remote, shown, startRef, refs);
    await gitOrFail(ctx.env, ['-C', dir, 'update-ref', branchRef, startCommit], 'recording the branch on the host');

    const featureListText = await showFile(ctx, dir, startCommit, FEATURE_LIST_FILE);
    let spec: PrepareRepositoryResult['spec'];
    if (input.specPath) {
      const text = await showFile(ctx, dir, startCommit, input.specPath);
      if (text === undefined) {
        throw repoFailure(
          REPO_FAILURE_TYPES.specNotFound,
          `specPath ${input.specPath}: no such file in ${shown} at ${startCommit.slice(0, 12)} (${branchExisted ? `branch ${input.branch}` : `its start ${startRef}`})`,
        );
      }
      const truncated = Buffer.byteLength(text) > SPEC_MAX_BYTES;
      spec = { text: truncated ? Buffer.from(text).subarray(0, SPEC_MAX_BYTES).toString('utf8') : text, truncated };
    }
    // hooks: the repository's own, at the commit the run starts from, where the worker allows them.
    const repositoryHooks = ctx.repositoryHooks ? await repositoryHooksAt(dir, startCommit) : undefined;
    return {
      remote: shown,
      branch: input.branch,
      branchExisted,
      startCommit,
      ...(featureListText !== undefined ? { featureListText } : {}),
      ...(spec ? { spec } : {}),
      ...(repositoryHooks ? { repositoryHooks } : {}),
      hostRepository: dir,
    };
  } catch (err) {
    throw toRepoFailure(err);
  }
}

/** The host's bare repository of the session, created on first use. */
export async function ensureBareRepository(ctx: RepoContext, sessionId: string): Promise<string> {
  const dir = hostRepositoryOf(ctx, sessionId);
  if (fs.existsSync(path.join(dir, 'HEAD'))) return dir;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const staging = `${dir}.tmp-${process.pid}-${Date.now()}`;
  await gitOrFail(ctx.env, ['init', '--bare', '-q', staging], 'creating the host repository');
  try {
    fs.renameSync(staging, dir);
  } catch (err) {
    // Another attempt made it first: use theirs.
    fs.rmSync(staging, { recursive: true, force: true });
    if (!fs.existsSync(path.join(dir, 'HEAD'))) throw err;
  }
  return dir;
}

/** `git ls-remote --symref`: ref name → commit, plus `HEAD` → its target branch under `symref:HEAD`. */
async function listRemoteRefs(ctx: RepoContext, remote: string, shown: string): Promise<Map<string, string>> {
  const out = await gitOrFail(ctx.env, ['ls-remote', '--symref', remote], `reading ${shown}`);
  const refs = new Map<string, string>();
  for (const line of out.split('\n')) {
    const symref = /^ref: (\S+)\tHEAD$/.exec(line);
    if (symref) {
      refs.set('symref:HEAD', symref[1]!);
      continue;
    }
    const [sha, name] = line.split('\t');
    if (sha && name) refs.set(name, sha);
  }
  return refs;
}

/** Where a new branch starts: the task's `ref` (branch, tag or commit) or the remote's default branch. */
function startingRef(refs: Map<string, string>, input: PrepareRepositoryInput, shown: string): string {
  const ref = input.repo.kind === 'git' ? input.repo.ref : undefined;
  if (ref === undefined) {
    const head = refs.get('symref:HEAD');
    if (head && refs.has(head)) return head;
    const first = [...refs.keys()].find((name) => name.startsWith('refs/heads/'));
    if (first) return first;
    throw repoFailure(REPO_FAILURE_TYPES.refNotFound, `${shown} has no branches to start from (an empty repository)`);
  }
  for (const candidate of [ref, `refs/heads/${ref}`, `refs/tags/${ref}`]) if (refs.has(candidate)) return candidate;
  if (/^[0-9a-f]{7,40}$/i.test(ref)) return ref;
  throw repoFailure(REPO_FAILURE_TYPES.refNotFound, `repo.ref ${ref}: no such branch, tag or commit in ${shown}`);
}

/** Fetches the start into the host's repository and returns its commit. */
async function fetchStart(
  ctx: RepoContext,
  dir: string,
  remote: string,
  shown: string,
  startRef: string,
  refs: Map<string, string>,
): Promise<string> {
  if (refs.has(startRef)) {
    await gitOrFail(
      ctx.env,
      ['-C', dir, 'fetch', '-q', '--no-tags', remote, `+${startRef}:refs/agent/start`],
      `fetching ${startRef} from ${shown}`,
    );
    return gitOrFail(ctx.env, ['-C', dir, 'rev-parse', 'refs/agent/start^{commit}'], 'reading the start commit');
  }
  // A commit id: fetch the branches, then look for it.
  await gitOrFail(
    ctx.env,
    ['-C', dir, 'fetch', '-q', '--no-tags', remote, '+refs/heads/*:refs/remotes/origin/*'],
    `fetching ${shown}`,
  );
  const found = await git(ctx.env, ['-C', dir, 'rev-parse', '-q', '--verify', `${startRef}^{commit}`]);
  if (found.code !== 0) {
    throw repoFailure(REPO_FAILURE_TYPES.refNotFound, `repo.ref ${startRef}: no such commit on a branch of ${shown}`);
  }
  return found.stdout.trim();
}

/** A file's text at a commit, or undefined when the commit has no such file. */
async function showFile(ctx: RepoContext, dir: string, commit: string, file: string): Promise<string | undefined> {
  const exists = await git(ctx.env, ['-C', dir, 'cat-file', '-e', `${commit}:${file}`]);
  if (exists.code !== 0) return undefined;
  const result = await git(ctx.env, ['-C', dir, 'cat-file', 'blob', `${commit}:${file}`]);
  if (result.code !== 0) return undefined;
  return result.stdout;
}
