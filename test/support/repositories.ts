/**
 * Repositories made of a few files for tests, in a temporary folder (or under the home directory,
 * a root the hands worker allows by default, for tests that seed a workspace from one), removed by
 * `removeRepositories` at the end of the file.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const made: string[] = [];

export function writeRepository(files: Record<string, string>, options: { underHome?: boolean } = {}): string {
  const parent = options.underHome ? os.homedir() : os.tmpdir();
  const dir = fs.mkdtempSync(path.join(parent, '.agent-test-repo-'));
  made.push(dir);
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

export function removeRepositories(): void {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}
