/**
 * The workflow bundle's preloaded modules (`workers/workflow-bundle.ts`): zod is evaluated once per
 * worker and shared, frozen, by every workflow (instead of once per workflow, each cached workflow
 * holding a copy), and workflows still build and use schemas with it, two in a row on one worker.
 */
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
      expect(result).toEqual({ frozen: true, message: 'Invalid input: expected string, received number' });
    }
  });
});
