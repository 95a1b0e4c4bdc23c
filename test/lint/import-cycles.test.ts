/** The import-cycle check of `npm run lint` (`scripts/import-cycles.ts`) on small trees of its own. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { findCycles, importGraph } from '../../scripts/import-cycles';

function tree(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'import-cycles-'));
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  return root;
}

describe('import cycles', () => {
  it('finds a cycle through a type-only import and a re-export, and marks which edges import types only', () => {
    const root = tree({
      'a/one.ts': "import { two } from './two';\nexport const one = two;\n",
      'a/two.ts': "import type { Three } from '../b/three';\nexport const two = 2 as Three;\n",
      'b/three.ts': "export { one } from '../a/one';\nexport type Three = number;\n",
      'b/leaf.ts': "import { one } from '../a/one';\nexport const leaf = one;\n",
    });
    const cycles = findCycles(importGraph(['a', 'b'], root));
    expect(cycles).toEqual([
      {
        files: ['a/one.ts', 'a/two.ts', 'b/three.ts'],
        path: [
          { from: 'a/one.ts', to: 'a/two.ts', typeOnly: false },
          { from: 'a/two.ts', to: 'b/three.ts', typeOnly: true },
          { from: 'b/three.ts', to: 'a/one.ts', typeOnly: false },
        ],
      },
    ]);
  });

  it('resolves index files, follows dynamic imports and leaves out folders not asked for', () => {
    const root = tree({
      'a/index.ts': "export const start = () => import('./later');\n",
      'a/later.ts': "import { start } from '.';\nexport const later = start;\n",
      'c/outside.ts': "import { start } from '../a';\nexport const outside = start;\n",
    });
    expect(findCycles(importGraph(['a', 'c'], root)).map((cycle) => cycle.files)).toEqual([
      ['a/index.ts', 'a/later.ts'],
    ]);
    expect(findCycles(importGraph(['c'], root))).toEqual([]);
  });

  it('finds nothing in a tree without cycles', () => {
    const root = tree({
      'a/one.ts': "import { two } from './two';\nexport const one = two;\n",
      'a/two.ts': 'export const two = 2;\n',
    });
    expect(findCycles(importGraph(['a'], root))).toEqual([]);
  });
});
