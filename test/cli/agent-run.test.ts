/**
 * The `agent` CLI as a person runs it: `bin/agent run --with-worker --repo <path> "<goal>"` in a
 * real process against the test Temporal server, real Docker and the scripted model; then
 * `agent status` and `agent diff` on the finished operation.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../../platform/paths';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { FIX_FAILING_TEST_SCENARIO } from '../../scripted-model/scenarios/fix-failing-test';
import { testPlatform } from '../support/env';
import { removeSandboxes } from '../support/hands';

const run = promisify(execFile);
const AGENT = path.join(PROJECT_ROOT, 'bin', 'agent');

describe('agent CLI (real process)', () => {
  let model: ScriptedModelServer;
  const id = `cli-run-${process.pid}`;
  const env = () => ({
    ...process.env,
    TEMPORAL_ADDRESS: testPlatform().temporalAddress,
    TEMPORAL_NAMESPACE: testPlatform().namespace,
    ANTHROPIC_API_KEY: 'cli-test',
    ANTHROPIC_BASE_URL: model.url,
    AGENT_MODEL: 'scripted-model',
    AGENT_BRAIN_QUEUE: `${id}-brain`,
    AGENT_HANDS_QUEUE: `${id}-hands`,
    AGENT_WORKFLOW_BUNDLE: testPlatform().workflowBundlePath,
    AGENT_SANDBOX_IMAGE: testPlatform().sandboxImage,
  });

  beforeAll(async () => {
    model = await startScriptedModelServer({ script: FIX_FAILING_TEST_SCENARIO });
  });
  afterAll(async () => {
    await model.stop();
    await removeSandboxes([id]);
  });

  it('runs an operation to completion, then reports its status and diff', async () => {
    const repo = path.join(PROJECT_ROOT, 'examples', 'calculator');
    const { stdout } = await run(
      AGENT,
      ['run', '--with-worker', '--id', id, '--repo', repo, 'make the failing test pass'],
      { env: env() },
    );
    expect(stdout).toContain(`operation ${id} accepted`);
    expect(stdout).toMatch(/turn \d+ · /); // live progress
    expect(stdout).toContain('COMPLETED: end_turn');
    expect(stdout).toContain('All 4 tests pass');
    expect(stdout).toMatch(/Web UI: http:\/\/\S+\/workflows\/cli-run-/);
    model.assertScriptFinished();

    const status = await run(AGENT, ['status', id], { env: env() });
    expect(status.stdout).toContain(`${id}: completed — end_turn (6 turns`);

    const diff = await run(AGENT, ['diff', id], { env: env() });
    expect(diff.stdout).toContain('-  return sum(values) / (values.length - 1);');
    expect(diff.stdout).toContain('+  return sum(values) / values.length;');
  });

  it('says in one line what is wrong with bad input', async () => {
    const error = await run(AGENT, ['run', '--repo', '/no/such/dir', 'goal'], { env: env() }).catch(
      (err: { stderr: string; code: number }) => err,
    );
    expect(error).toMatchObject({ code: 1 });
    expect((error as { stderr: string }).stderr.trim()).toBe('error: --repo /no/such/dir: no such directory');
  });
});
