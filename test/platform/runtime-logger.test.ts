/**
 * The workers' logger: the SDK's own lines pass through at the configured level, except the warning
 * that a hands worker (activities only, by design) has no workflows — the demo printed it twice, and a
 * newcomer reads it as a fault.
 */
import type { LogEntry } from '@temporalio/worker';
import { EXPECTED_SDK_MESSAGES, HarnessLogger } from '../../workers/runtime';

describe('the workers’ logger', () => {
  it('leaves out only the expected SDK warning', () => {
    const entries: LogEntry[] = [];
    const logger = new HarnessLogger('WARN', (entry) => entries.push(entry));
    logger.warn('No workflows registered, not polling for workflow tasks', { taskQueue: 'hands' });
    logger.warn('Workflow task failed', { taskQueue: 'brain' });
    logger.info('Worker state changed');
    logger.error('Activity failed');
    expect(entries.map((entry) => [entry.level, entry.message])).toEqual([
      ['WARN', 'Workflow task failed'],
      ['ERROR', 'Activity failed'],
    ]);
    expect(EXPECTED_SDK_MESSAGES).toEqual(['No workflows registered, not polling for workflow tasks']);
  });
});
