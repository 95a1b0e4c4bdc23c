/**
 * Credentials never reach the sandbox: every git configuration file of a seeded repository
 * (`.git/config`, `.git/config.worktree`, `.git/modules/…/config`, `.git/worktrees/…/config.worktree`)
 * is rewritten on the host before it is copied, without
 *  - URL userinfo (`https://user:token@host/…`) in any value or section name — a remote keeps its
 *    clean URL (`https://host/…`);
 *  - `http.extraHeader` / `http.<url>.extraHeader` (what CI checkouts write: `AUTHORIZATION: basic …`);
 *  - every `credential.*` and `credential.<url>.*` setting (helpers, user names);
 *  - `url.<base>.insteadOf` / `pushInsteadOf` rewrites whose base or value carries userinfo (the
 *    rewrite stays, without the credentials);
 *  - `include.path` / `includeIf.<condition>.path` entries that point outside the repository (a
 *    file on the host the sandbox cannot see, or should not).
 * A file with nothing to remove is copied byte for byte; one that changes is written anew from its
 * entries (comments and layout are not kept, meaning is).
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { redactUserinfo } from './seed-source';

const execFileAsync = promisify(execFile);

/** True for the seeded paths (relative to the repository) that git reads as configuration. */
export function isGitConfigFile(rel: string): boolean {
  return (
    rel === '.git/config' ||
    rel === '.git/config.worktree' ||
    /^\.git\/modules\/.+\/config$/.test(rel) ||
    /^\.git\/worktrees\/[^/]+\/config\.worktree$/.test(rel)
  );
}

interface ConfigEntry {
  section: string;
  subsection?: string;
  name: string;
  /** Undefined for a key without `=` (a boolean true). */
  value?: string;
}

/**
 * The configuration text without credentials. `file` is the configuration's path on the host and
 * `repoRoot` the repository being seeded (include paths are resolved against the file's directory).
 */
export async function scrubGitConfig(text: Buffer, file: string, repoRoot: string): Promise<Buffer> {
  const entries = await readEntries(text);
  if (entries === undefined) return text;
  const kept: ConfigEntry[] = [];
  let changed = false;
  for (const entry of entries) {
    const scrubbed = scrubEntry(entry, path.dirname(file), repoRoot);
    if (scrubbed !== entry) changed = true;
    if (scrubbed) kept.push(scrubbed);
  }
  return changed ? Buffer.from(formatConfig(kept)) : text;
}

/** The entry as it may reach the sandbox: unchanged, rewritten without credentials, or null (dropped). */
function scrubEntry(entry: ConfigEntry, configDir: string, repoRoot: string): ConfigEntry | null {
  const { section, name } = entry;
  if (section === 'credential') return null;
  if (section === 'http' && name === 'extraheader') return null;
  if ((section === 'include' || section === 'includeif') && name === 'path') {
    return includeInside(entry.value ?? '', configDir, repoRoot) ? entry : null;
  }
  const subsection = entry.subsection === undefined ? undefined : redactUserinfo(entry.subsection);
  const value = entry.value === undefined ? undefined : redactUserinfo(entry.value);
  if (subsection === entry.subsection && value === entry.value) return entry;
  return { ...entry, ...(subsection !== undefined ? { subsection } : {}), ...(value !== undefined ? { value } : {}) };
}

function includeInside(target: string, configDir: string, repoRoot: string): boolean {
  if (!target || target.startsWith('~')) return false;
  const resolved = path.resolve(configDir, target);
  const root = path.resolve(repoRoot);
  return resolved === root || resolved.startsWith(`${root}/`);
}

/** The file's entries in order, as git parses them; undefined when git cannot parse it (copied as is). */
async function readEntries(text: Buffer): Promise<ConfigEntry[] | undefined> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-gitconfig-'));
  try {
    const file = path.join(dir, 'config');
    fs.writeFileSync(file, text);
    const { stdout } = await execFileAsync('git', ['config', '--file', file, '--list', '--null'], {
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout
      .split('\0')
      .filter(Boolean)
      .map((record) => {
        const newline = record.indexOf('\n');
        const key = newline < 0 ? record : record.slice(0, newline);
        const first = key.indexOf('.');
        const last = key.lastIndexOf('.');
        return {
          section: key.slice(0, first),
          ...(last > first ? { subsection: key.slice(first + 1, last) } : {}),
          name: key.slice(last + 1),
          ...(newline < 0 ? {} : { value: record.slice(newline + 1) }),
        };
      });
  } catch {
    return undefined;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Writes entries back in git's syntax, one section header per run of entries of the same section. */
export function formatConfig(entries: ConfigEntry[]): string {
  const lines: string[] = [];
  let header: string | undefined;
  for (const entry of entries) {
    const next =
      entry.subsection === undefined
        ? `[${entry.section}]`
        : `[${entry.section} "${entry.subsection.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"]`;
    if (next !== header) lines.push((header = next));
    lines.push(entry.value === undefined ? `\t${entry.name}` : `\t${entry.name} = ${quoteValue(entry.value)}`);
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

function quoteValue(value: string): string {
  const escaped = value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\t/g, '\\t');
  return /^\s|\s$|[#;]/.test(value) || value === '' ? `"${escaped}"` : escaped;
}
