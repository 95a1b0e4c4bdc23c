/**
 * `AGENT_WORKFLOW_STACK_TRACES` on a real brain worker (Temporal dev server, scripted model): with
 * stack traces on, the SDK's `__stack_trace` query (the Web UI's Stack Trace tab) shows where the
 * operation waits, in the workflow's own source; off, it shows no frames, and the operation runs the
 * same.
 */
import { DEFAULT_BRAIN_WORKER_SETTINGS } from '../../workers/worker-settings';
import { startOperationHarness, waitFor } from '../support/operation-harness';

/** Long enough that the model call is still open when the test asks; the test ends the run itself. */
const HELD_MS = 120_000;

describe('workflow stack traces (AGENT_WORKFLOW_STACK_TRACES)', () => {
  it.each([
    ['on', true],
    ['off', false],
  ] as const)('%s: the Stack Trace query of an operation waiting on its model call', async (_name, traces) => {
    const h = await startOperationHarness([{ label: 'held', latencyMs: HELD_MS, text: 'never read' }], {
      brain: { settings: { ...DEFAULT_BRAIN_WORKER_SETTINGS, workflowStackTraces: traces } },
    });
    try {
      const handle = await h.start({ goal: 'answer' });
      await waitFor(async () => h.model.requests.length >= 1, 'the held model request');
      const stack = await handle.query<string>('__stack_trace');
      if (traces) {
        expect(stack).toMatch(/\bat /);
        expect(stack).toMatch(/workflows\//);
      } else {
        expect(stack).not.toMatch(/\bat /);
      }
      await handle.terminate('the test has its answer');
    } finally {
      await h.close();
    }
  });
});
