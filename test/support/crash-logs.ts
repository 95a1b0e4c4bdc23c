/**
 * The crash matrices' worker logs (each worker's output and the boundaries it passed): removed after
 * a run that passed, kept after one that failed, with their place said, so that a failure can be read
 * after the fact (a worker that died before its first boundary, say, shows why in its own log).
 */
import * as fs from 'node:fs';

export function keepOrRemoveLogs(dir: string, keep: boolean): void {
  if (keep) {
    process.stderr.write(`crash matrix: the workers' logs are kept in ${dir}\n`);
    return;
  }
  fs.rmSync(dir, { recursive: true, force: true });
}
