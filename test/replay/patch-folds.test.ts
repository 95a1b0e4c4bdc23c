/**
 * The patch folds (`workflows/shared/patches.ts`): every folded id is a patch of the workflow code,
 * and no code asks `patched()` about a folded id directly (it would write the id's marker in a run
 * whose fold already stands for it). The fixtures `completed-patches-folded` and
 * `coding-task-patches-folded` (replayed by `replay.test.ts`) were recorded with the fold; a live
 * operation's single marker is checked in `test/operation/step-shape.test.ts`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PATCH_FOLDS } from '../../workflows/shared/patches';
import { WORKFLOW_VERSIONING } from '../../common/versioning';

const WORKFLOWS = path.join(__dirname, '..', '..', 'workflows');

function sources(dir: string): { file: string; text: string }[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts')
      ? [{ file: path.relative(WORKFLOWS, full), text: fs.readFileSync(full, 'utf8') }]
      : [];
  });
}

describe('patch folds', () => {
  const files = sources(WORKFLOWS);
  const patchIds = new Map<string, string>(); // constant -> id
  for (const { text } of files) {
    for (const match of text.matchAll(/export const (\w+_PATCH) = '([^']+)'/g)) patchIds.set(match[1]!, match[2]!);
  }
  const folded = new Set(PATCH_FOLDS.flatMap((fold) => fold.ids));

  it('fold only ids the workflow code has, each once, under markers that are no patch id', () => {
    expect(patchIds.size).toBeGreaterThanOrEqual(folded.size);
    const known = new Set(patchIds.values());
    expect([...folded].filter((id) => !known.has(id))).toEqual([]);
    for (const fold of PATCH_FOLDS) {
      expect(new Set(fold.ids).size).toBe(fold.ids.length);
      expect(known.has(fold.marker)).toBe(false);
    }
    expect(new Set(PATCH_FOLDS.map((fold) => fold.marker)).size).toBe(PATCH_FOLDS.length);
  });

  it('leave the patches of AutoUpgrade types out, and no code asks patched() about a folded id', () => {
    const direct: string[] = [];
    for (const { file, text } of files) {
      if (file === path.join('shared', 'patches.ts')) continue;
      for (const match of text.matchAll(/(?<![\w.])patched\((\w+)\)/g)) {
        const id = patchIds.get(match[1]!);
        if (id === undefined || folded.has(id)) direct.push(`${file}: patched(${match[1]})`);
      }
    }
    expect(direct).toEqual([]);
    // The one AutoUpgrade type with a patch: a session moved back to an older build must replay there.
    expect(WORKFLOW_VERSIONING.session?.behaviour).toBe('AUTO_UPGRADE');
    expect(folded.has('session-ledger')).toBe(false);
  });
});
