/**
 * A repository's own hooks (`.agent/hooks.json`), where the hands worker allows them
 * (`AGENT_REPOSITORY_HOOKS=on`). They are read on the hands host from the repository the input
 * names — a local directory, a local git repository at the input's ref, or a coding task's host
 * clone at the commit its run starts from — never from the workspace, which the agent can change.
 * A remote git URL's hooks are not read (the seed check does not clone). An invalid file is an
 * `InvalidRepositoryHooks` failure that names the file and the field.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { HOOKS_FAILURE_TYPES, hooksSchema, REPOSITORY_HOOKS_FILE, type HooksInput } from '../../common/hooks';
import { describeZodError } from '../../common/validation';
import type { CheckedSeedSource } from '../hands/seed-source';

/** The largest hooks file read. */
const MAX_BYTES = 256 * 1024;

/** The hooks of a checked seed source, or undefined when it has none (or is a remote URL). */
export async function repositoryHooksOf(source: CheckedSeedSource): Promise<HooksInput | undefined> {
  if (source.kind === 'local') {
    const text = readInside(source.path, REPOSITORY_HOOKS_FILE);
    return text === undefined ? undefined : parseRepositoryHooks(text, `${source.path}/${REPOSITORY_HOOKS_FILE}`);
  }
  if (!source.localPath) return undefined;
  const ref = source.ref ?? 'HEAD';
  const text = await gitShow(source.localPath, `${ref}:${REPOSITORY_HOOKS_FILE}`);
  return text === undefined
    ? undefined
    : parseRepositoryHooks(text, `${source.url} at ${ref}: ${REPOSITORY_HOOKS_FILE}`);
}

/** The hooks file of a commit in a bare host clone (a coding task's), or undefined. */
export async function repositoryHooksAt(gitDir: string, commit: string): Promise<HooksInput | undefined> {
  const text = await gitShow(gitDir, `${commit}:${REPOSITORY_HOOKS_FILE}`);
  return text === undefined
    ? undefined
    : parseRepositoryHooks(text, `${REPOSITORY_HOOKS_FILE} at ${commit.slice(0, 12)}`);
}

/** Checks a hooks file's text; the value is the file's JSON as it passed the schema (an input like any other). */
export function parseRepositoryHooks(text: string, where: string): HooksInput {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw invalid(`${where}: not JSON: ${(err as Error).message}`);
  }
  const checked = hooksSchema.safeParse(raw);
  if (!checked.success) throw invalid(`${where}: ${describeZodError(checked.error, raw)}`);
  return raw as HooksInput;
}

function invalid(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: HOOKS_FAILURE_TYPES.invalidRepositoryHooks, message, nonRetryable: true });
}

/** A file inside `root`, not through a link that leaves it; undefined when there is none. */
function readInside(root: string, relative: string): string | undefined {
  const file = path.join(root, relative);
  let real: string;
  try {
    real = fs.realpathSync(file);
  } catch {
    return undefined;
  }
  if (!real.startsWith(`${fs.realpathSync(root)}${path.sep}`))
    throw invalid(`${file}: a link that leaves the repository`);
  const stat = fs.statSync(real);
  if (!stat.isFile()) return undefined;
  if (stat.size > MAX_BYTES) throw invalid(`${file}: larger than ${MAX_BYTES} bytes`);
  return fs.readFileSync(real, 'utf8');
}

/** The blob `object` of a local repository; undefined when it does not exist. */
function gitShow(gitDir: string, object: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    execFile('git', ['-C', gitDir, 'cat-file', 'blob', object], { maxBuffer: MAX_BYTES }, (err, stdout) => {
      if ((err as { code?: unknown } | null)?.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER')
        reject(invalid(`${object}: larger than ${MAX_BYTES} bytes`));
      else resolve(err ? undefined : String(stdout));
    });
  });
}
