/**
 * The workflow bundle's preloaded modules (`workers/workflow-bundle.ts`): zod and the modules of
 * `common/` are evaluated once per worker and shared, frozen, by every workflow (instead of once per
 * workflow, each cached workflow holding a copy), and workflows still validate with the shared
 * schemas and build their own, two in a row on one worker. Every module of `common/` in the bundle
 * is preloaded: one left out would be evaluated again per workflow, and the schemas it builds
 * with the shared ones would be its own again.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowInterceptorModules, workflowPreloadModules } from '../../workers/workflow-bundle';
import type { ZodInWorkflow } from '../support/bundle-workflows';
import { connectTestTemporal, createTestWorker, uniqueQueue, type TestTemporal } from '../support/temporal';

describe('modules shared by every workflow', () => {
  let temporal: TestTemporal;
  beforeAll(async () => {
    temporal = await connectTestTemporal();
  });
  afterAll(async () => {
    await temporal.close();
  });

  it('gives every workflow the one preloaded zod, which validates with its default messages', async () => {
    const taskQueue = uniqueQueue('shared-modules');
    const worker = await createTestWorker(temporal, { taskQueue, reuseV8Context: true });
    const results = await worker.runUntil(async () => {
      const run = (n: number) =>
        temporal.client.workflow.execute<() => Promise<ZodInWorkflow>>('zodInWorkflow', {
          taskQueue,
          workflowId: `${taskQueue}-${n}`,
        });
      return [await run(1), await run(2)];
    });
    for (const result of results) {
      expect(result).toEqual({
        frozen: { zod: true, operationInput: true, laneName: true },
        message: 'Invalid input: expected string, received number',
        laneName: { valid: true, invalid: expect.stringContaining('must be 1-64 letters') },
        operationInput: { valid: true, invalid: 'budget.maxTurns' },
        checkpoint: true,
      });
    }
  });

  it('preloads every module of common/ the workflows use', async () => {
    const bundle = await bundleWorkflowCode({
      workflowsPath: require.resolve('../../workflows'),
      workflowInterceptorModules: workflowInterceptorModules(),
      preloadModules: workflowPreloadModules(),
      logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} },
    });
    const inBundle = new Set([...bundle.code.matchAll(/^\/\*\*\*\/ "\.\/common\/([^"]+)\.ts"/gm)].map((m) => m[1]!));
    const preloadedSource = fs.readFileSync(path.join(__dirname, '../../common/preloaded.ts'), 'utf8');
    const preloaded = new Set(
      [...preloadedSource.matchAll(/^import (?:\* as \w+ from )?'\.\/([^']+)';$/gm)].map((m) => m[1]!),
    );
    inBundle.delete('preloaded');
    expect(inBundle.size).toBeGreaterThan(30);
    expect([...inBundle].filter((name) => !preloaded.has(name)).sort()).toEqual([]);
  });
});
