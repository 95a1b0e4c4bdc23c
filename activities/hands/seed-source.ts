/**
 * What a workflow input may name as the repository to seed a workspace from, checked on the hands
 * host (where the files are read and the clone runs) before anything is copied:
 *
 *  - a local directory: an absolute path that exists, is a directory, and — after symbolic links are
 *    resolved — lies inside one of the hands worker's allowed roots (`AGENT_ALLOWED_ROOTS`, default:
 *    the worker user's home and the project's `examples/`);
 *  - a git URL: `https://`, `http://`, `ssh://`, `git://` or `[user@]host:path`; a local repository
 *    (`/abs/path` or `file://`) only inside the allowed roots; never a remote helper (`ext::…`,
 *    `fd::…`) or anything that could reach `git` as an option.
 *
 * A source that fails the check is an `InvalidSeedSource` ApplicationFailure (not retryable) whose
 * message names the path and the allowed roots. Used by the `checkSeedSource` activity (before an
 * operation's first model call) and by every host-side copy or clone.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ApplicationFailure } from '@temporalio/common';
import { HANDS_FAILURE_TYPES, type SeedSource } from '../../common/hands';
import { handsFailure } from './failures';

/** The environment variable that lists the allowed roots, colon-separated like PATH. */
export const ALLOWED_ROOTS_ENV = 'AGENT_ALLOWED_ROOTS';

/** The source as it will be read: the real path of a local directory, or the URL to clone. */
export type CheckedSeedSource =
  | { kind: 'local'; path: string }
  | {
      kind: 'git';
      url: string;
      ref?: string;
      /** Set when the URL names a repository on this host. */ localPath?: string;
    };

const NETWORK_URL = /^(https?|ssh|git):\/\/[^\s]+$/i;
/** `[user@]host:path`, the form git reads as ssh (no slash before the colon, not a `::` helper). */
const SCP_LIKE = /^([A-Za-z0-9._~-]+@)?[A-Za-z0-9.-]+:(?!:)[^\s]*$/;
// eslint-disable-next-line no-control-regex -- the point is to find control characters
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Checks a seed source against the allowed roots; returns what to read or clone, or throws an
 * `InvalidSeedSource` failure naming the path and the roots.
 */
export function checkSeedSource(source: SeedSource, allowedRoots: readonly string[]): CheckedSeedSource {
  if (source === null || typeof source !== 'object') throw invalid('the seed source must be an object', allowedRoots);
  if (source.kind === 'local') return { kind: 'local', path: checkLocalDirectory(source.path, allowedRoots) };
  if (source.kind !== 'git') {
    throw invalid(`unknown seed source kind ${JSON.stringify((source as { kind?: unknown }).kind)}`, allowedRoots);
  }
  const { url, ref } = source;
  if (typeof url !== 'string' || !url || url.startsWith('-') || CONTROL.test(url)) {
    throw invalid(`git URL ${JSON.stringify(url)} is not a URL git may be given`, allowedRoots);
  }
  if (ref !== undefined && (typeof ref !== 'string' || !ref || ref.startsWith('-') || CONTROL.test(ref))) {
    throw invalid(`git ref ${JSON.stringify(ref)} is not a branch, tag or commit git may be given`, allowedRoots);
  }
  const refPart = ref !== undefined ? { ref } : {};
  if (url.startsWith('/') || /^file:\/\//i.test(url)) {
    const local = url.startsWith('/') ? url : decodeURIComponent(url.slice('file://'.length));
    return { kind: 'git', url, ...refPart, localPath: checkLocalDirectory(local, allowedRoots) };
  }
  if (NETWORK_URL.test(url) || (SCP_LIKE.test(url) && !url.includes('::'))) return { kind: 'git', url, ...refPart };
  throw invalid(
    `git URL ${JSON.stringify(redactUserinfo(url))} uses a form the hands do not clone: use https://, ssh://, git://, ` +
      'user@host:path, or an absolute path inside the allowed roots',
    allowedRoots,
  );
}

/** The real path of `dir` if it is an existing directory inside the allowed roots. */
function checkLocalDirectory(dir: unknown, allowedRoots: readonly string[]): string {
  if (typeof dir !== 'string' || !dir) throw invalid('the path is empty', allowedRoots);
  if (CONTROL.test(dir)) throw invalid(`${JSON.stringify(dir)} contains control characters`, allowedRoots);
  if (!path.isAbsolute(dir)) throw invalid(`${dir} is not an absolute path`, allowedRoots);
  let real: string;
  try {
    real = fs.realpathSync(dir);
  } catch {
    throw invalid(`${dir} does not exist`, allowedRoots);
  }
  const roots = realRoots(allowedRoots);
  if (!roots.some((root) => real === root || real.startsWith(root.endsWith('/') ? root : `${root}/`))) {
    const resolved = real === dir ? '' : ` (it resolves to ${real})`;
    throw invalid(`${dir}${resolved} is outside the allowed roots`, allowedRoots, true);
  }
  if (!fs.statSync(real).isDirectory()) throw invalid(`${dir} is not a directory`, allowedRoots);
  return real;
}

function realRoots(allowedRoots: readonly string[]): string[] {
  return allowedRoots.flatMap((root) => {
    try {
      return [fs.realpathSync(root)];
    } catch {
      return [];
    }
  });
}

function invalid(problem: string, allowedRoots: readonly string[], howToAllow = false): ApplicationFailure {
  const roots = allowedRoots.length ? allowedRoots.join(', ') : '(none)';
  const hint = howToAllow ? `; to allow another directory, add it to ${ALLOWED_ROOTS_ENV} on the hands worker` : '';
  return handsFailure(HANDS_FAILURE_TYPES.invalidSeedSource, `seed source ${problem} (allowed roots: ${roots})${hint}`);
}

/** The URL without `user:password@`. */
export function redactUserinfo(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^@/\s]+@/gi, '$1');
}

/** `/abs/dir:/other`: the directories of `AGENT_ALLOWED_ROOTS`; throws when one is not absolute. */
export function parseAllowedRoots(text: string): string[] {
  const roots = text.split(':').filter(Boolean);
  const relative = roots.find((root) => !path.isAbsolute(root));
  if (relative !== undefined)
    throw new Error(`${JSON.stringify(relative)} is not an absolute path (use /abs/dir:/other)`);
  return roots.map((root) => path.resolve(root));
}
