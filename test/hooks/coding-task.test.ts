/**
 * A coding task whose Stop hook runs the tests keeps the agent at its feature until they pass (real
 * Temporal, Docker, git and the scripted agent on examples/textkit): the agent's first `slug` is
 * broken and it tries to end; the hook refuses with the failing tests' output, the agent reads it,
 * fixes the module and ends again; the hook lets it, and the harness's verification accepts the
 * feature on its first attempt.
 */
import {
  FEATURE_HEADING,
  TEXTKIT_FEATURES,
  codingTaskScenario,
  firstUserText,
} from '../../scripted-model/scenarios/coding-task';
import type { ScriptFunction } from '../../scripted-model/script';
import { startTaskHarness, taskResult, type TaskHarness } from '../support/coding-task';
import { hookDecisions } from './fixtures';

jest.setTimeout(600_000);

const REFUSED = '[a Stop hook refused the end of your turn]';

/** The textkit agent, broken at its first `slug`, which fixes it when a Stop hook refuses its end. */
function agentThatListens(): ScriptFunction {
  const scenario = codingTaskScenario({ cheats: { slug: { 1: ['broken'] } } });
  return (request) => {
    if (firstUserText(request).startsWith(FEATURE_HEADING) && request.lastUserText.startsWith(REFUSED)) {
      return {
        text: 'The Stop hook says the tests fail; fixing slug.',
        toolCalls: [
          {
            id: `toolu_fix_${request.requestIndex}`,
            name: 'write_file',
            input: { path: 'src/commands/slug.js', content: TEXTKIT_FEATURES.slug!.module },
          },
          {
            id: `toolu_commit_${request.requestIndex}`,
            name: 'bash',
            input: { command: 'npm test 2>&1 | grep -E "^# (pass|fail)"; git add -A && git commit -q -m "Fix slug"' },
          },
        ],
      };
    }
    return scenario(request);
  };
}

describe('a coding task with a Stop hook on the tests', () => {
  let h: TaskHarness;
  beforeAll(async () => {
    h = await startTaskHarness({}, { script: agentThatListens() });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('sends the agent back while the tests fail, and accepts the feature once they pass', async () => {
    const handle = await h.start({
      specPath: 'SPEC.md',
      verify: 'npm test',
      budget: { featuresPerRun: 1 },
      hooks: { Stop: [{ hooks: [{ type: 'command', command: 'npm test >&2 || exit 2', timeout: 120 }] }] },
    });
    const result = await taskResult(handle);
    expect(result.state).toBe('completed');
    expect(result.features.find((f) => f.id === 'slug')).toMatchObject({ passes: true });
    const feature = result.ledger.find((entry) => entry.kind === 'feature')!;
    expect(feature).toMatchObject({ featureId: 'slug', attempt: 1, verified: true });

    const operation = h.temporal.client.workflow.getHandle(feature.operationId);
    const decided = await hookDecisions(h.temporal.client, operation);
    expect(decided.map((e) => [e.data.event, e.data.decision])).toEqual([
      ['Stop', 'block'],
      ['Stop', 'continue'],
    ]);
    expect(String(decided[0]!.data.reason)).toContain('not ok');
    // The initializer's end passed the hook too (the tests passed then).
    const initializer = result.ledger.find((entry) => entry.kind === 'initializer')!;
    const atInit = await hookDecisions(
      h.temporal.client,
      h.temporal.client.workflow.getHandle(initializer.operationId),
    );
    expect(atInit.map((e) => e.data.decision)).toEqual(['continue']);
  });
});
