/**
 * The repository's files as the environment resolution reads them, on the hands host: a local
 * directory (an operation's `repo`), a fresh shallow clone (an operation's git `repo`), or the
 * commit a coding task starts from in the host's bare clone (written out once into a temporary
 * directory). Nothing here runs the repository's code.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Files above this size are not read as definitions (a 5 MB package.json is not one). */
const MAX_DEFINITION_BYTES = 1024 * 1024;

/** How many folders below the root `find` looks (`services/api/go.mod` is 2, `apps/web/ui/package.json` 3). */
export const MAX_DETECTION_DEPTH = 3;
/** Most directory entries `find` looks at: a huge tree is read partly, never for long. */
const MAX_WALKED_ENTRIES = 50_000;
/**
 * Folders `find` does not enter: vendored code (another project's definitions), generated output,
 * virtual environments and test data that describes other projects. Hidden folders (`.git`,
 * `.venv`, `.tox`, …) are skipped too.
 */
export const SKIPPED_FOLDERS: ReadonlySet<string> = new Set([
  'node_modules',
  'bower_components',
  'jspm_packages',
  'vendor',
  'third_party',
  'third-party',
  'site-packages',
  'venv',
  'target',
  'dist',
  'build',
  'out',
  '_build',
  '__pycache__',
  'coverage',
  'testdata',
  'fixtures',
  '__fixtures__',
]);

export interface RepoFiles {
  /** The directory holding the files. */
  readonly root: string;
  /** A file's text, or undefined when it does not exist, is not a regular file or is too large. */
  read(relative: string): string | undefined;
  exists(relative: string): boolean;
  /** Root-level file names matching `pattern`. */
  list(pattern: RegExp): string[];
  /**
   * Regular files below the root whose name `pattern` matches, as paths relative to the root
   * (`services/api/go.mod`): at most `MAX_DETECTION_DEPTH` folders down, not in `SKIPPED_FOLDERS`
   * or hidden folders, not through symlinks; the root's files first, then folder by folder in name
   * order.
   */
  find(pattern: RegExp): string[];
  /** Removes what was made for reading (a clone, an export). */
  close(): void;
}

export function directoryFiles(root: string, cleanup?: () => void): RepoFiles {
  const inside = (relative: string): string => {
    const full = path.resolve(root, relative);
    if (full !== root && !full.startsWith(root + path.sep)) throw new Error(`${relative} is outside the repository`);
    return full;
  };
  let walked: string[] | undefined;
  return {
    root,
    read(relative) {
      try {
        const full = inside(relative);
        const real = fs.realpathSync(full);
        // A symlink out of the repository is not followed.
        if (real !== root && !real.startsWith(fs.realpathSync(root) + path.sep)) return undefined;
        const stat = fs.statSync(real);
        if (!stat.isFile() || stat.size > MAX_DEFINITION_BYTES) return undefined;
        return fs.readFileSync(real, 'utf8');
      } catch {
        return undefined;
      }
    },
    exists(relative) {
      try {
        return fs.existsSync(inside(relative));
      } catch {
        return false;
      }
    },
    list(pattern) {
      try {
        return fs.readdirSync(root).filter((name) => pattern.test(name));
      } catch {
        return [];
      }
    },
    find(pattern) {
      walked ??= walkFiles(root);
      return walked.filter((file) => pattern.test(file.slice(file.lastIndexOf('/') + 1)));
    },
    close() {
      cleanup?.();
    },
  };
}

/** Every regular file `find` may return, in its order (read once per `RepoFiles`). */
function walkFiles(root: string): string[] {
  const found: string[] = [];
  let walked = 0;
  // Breadth first: the root's files, then each level's, so a cut-off walk has read the shallow ones.
  let level: string[] = [''];
  for (let depth = 0; depth <= MAX_DETECTION_DEPTH && level.length; depth++) {
    const next: string[] = [];
    for (const folder of level) {
      let entries: fs.Dirent[];
      try {
        entries = fs.readdirSync(path.join(root, folder), { withFileTypes: true });
      } catch {
        continue;
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const entry of entries) {
        if (++walked > MAX_WALKED_ENTRIES) return found;
        const relative = folder ? `${folder}/${entry.name}` : entry.name;
        if (entry.isFile()) found.push(relative);
        else if (entry.isDirectory() && !entry.name.startsWith('.') && !SKIPPED_FOLDERS.has(entry.name))
          next.push(relative);
      }
    }
    level = next;
  }
  return found;
}

/** The files of `commit` in a (bare) repository on the host, exported to a temporary directory. */
export async function commitFiles(repository: string, commit: string): Promise<RepoFiles> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-env-src-'));
  try {
    const archive = path.join(dir, 'export.tar');
    await execFileAsync('git', ['-C', repository, 'archive', '--format=tar', '-o', archive, commit]);
    const root = path.join(dir, 'repo');
    fs.mkdirSync(root);
    await execFileAsync('tar', ['-xf', archive, '-C', root]);
    fs.rmSync(archive);
    return directoryFiles(root, () => fs.rmSync(dir, { recursive: true, force: true }));
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** A shallow clone of `url` at `ref` (its default branch without one). */
export async function cloneFiles(url: string, ref: string | undefined, hostEnv: NodeJS.ProcessEnv): Promise<RepoFiles> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-env-src-'));
  const root = path.join(dir, 'repo');
  const env = { ...hostEnv, GIT_TERMINAL_PROMPT: '0' };
  try {
    await execFileAsync('git', ['clone', '--quiet', '--depth', '1', '--no-tags', '--', url, root], { env });
    if (ref) {
      await execFileAsync('git', ['-C', root, 'fetch', '--quiet', '--depth', '1', 'origin', ref], { env });
      await execFileAsync('git', ['-C', root, 'checkout', '--quiet', 'FETCH_HEAD'], { env });
    }
    return directoryFiles(root, () => fs.rmSync(dir, { recursive: true, force: true }));
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
