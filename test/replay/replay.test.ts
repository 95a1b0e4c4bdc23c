/**
 * Determinism: recorded histories of representative operations replay against the current workflow
 * code. A workflow change that would break running operations fails here. To change workflow code
 * compatibly use `patched()`; re-record (`npm run fixtures:record`) only for intended breaks.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { testPlatform } from '../support/env';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'histories');

describe('recorded histories replay without non-determinism', () => {
  const files = fs.readdirSync(FIXTURES).filter((f) => f.endsWith('.json'));

  it('has fixtures to replay', () => {
    expect(files.length).toBeGreaterThanOrEqual(4);
  });

  it.each(files)('%s', async (file) => {
    const history = historyFromJSON(JSON.parse(fs.readFileSync(path.join(FIXTURES, file), 'utf8')));
    expect(history.events?.length).toBeGreaterThan(0);
    // The recorded workflow id: a workflow names its children after its own id (a subagent's operation).
    const workflowId = history.events?.[0].workflowExecutionStartedEventAttributes?.workflowId || file;
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: testPlatform().workflowBundlePath } },
      history,
      workflowId,
    );
  });
});
