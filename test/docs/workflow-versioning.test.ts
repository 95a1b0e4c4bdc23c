/**
 * Every workflow type the workers register declares its Worker Versioning behaviour
 * (`common/versioning.ts`), only to a versioned worker, and docs/changing-workflow-code.md's table
 * says the same as the code.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { VERSIONED_WORKER_GLOBAL, WORKFLOW_VERSIONING } from '../../common/versioning';
import { PROJECT_ROOT } from '../../platform/paths';
import * as workflows from '../../workflows';

type Declared = { workflowDefinitionOptions?: () => { versioningBehavior?: string } };

describe('Worker Versioning behaviours', () => {
  const registered = Object.keys(workflows).sort();

  it('declares one for every registered workflow type, and none for a type that is not', () => {
    expect(Object.keys(WORKFLOW_VERSIONING).sort()).toEqual(registered);
  });

  it('declares it to a versioned worker only (an unversioned one refuses a task that declares one)', () => {
    const global = globalThis as Record<string, unknown>;
    for (const type of registered) {
      const options = (workflows as Record<string, Declared>)[type].workflowDefinitionOptions;
      expect(typeof options).toBe('function');
      expect(options!()).toEqual({});
      global[VERSIONED_WORKER_GLOBAL] = true;
      try {
        expect(options!()).toEqual({ versioningBehavior: WORKFLOW_VERSIONING[type].behaviour });
      } finally {
        delete global[VERSIONED_WORKER_GLOBAL];
      }
    }
  });

  it('is the table of docs/changing-workflow-code.md', () => {
    const page = fs.readFileSync(path.join(PROJECT_ROOT, 'docs', 'changing-workflow-code.md'), 'utf8');
    const rows = [...page.matchAll(/^\| `(\w+)` \| (Pinned|AutoUpgrade) \|/gm)].map(([, type, behaviour]) => [
      type,
      behaviour === 'Pinned' ? 'PINNED' : 'AUTO_UPGRADE',
    ]);
    expect(Object.fromEntries(rows)).toEqual(
      Object.fromEntries(Object.entries(WORKFLOW_VERSIONING).map(([type, { behaviour }]) => [type, behaviour])),
    );
  });
});
