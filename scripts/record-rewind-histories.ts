/**
 * The rewind fixtures of `npm run fixtures:record`: an operation of a session that records
 * checkpoints (a base one, then after each turn that could change files: a shell command, an edit
 * tool; none after a read), the `rewind` workflow that forks it at turn 2, and the session it makes
 * (its lane continues the conversation and runs the rewind's prompt). All three run when one of them
 * is wanted.
 */
import { runRewind } from '../client/rewind';
import { sessionWorkflowId } from '../common/session';
import { rewindWorkflowId } from '../common/rewind';
import type { OperationHarness } from '../test/support/operation-harness';

type Record = (name: string, workflowId: string) => Promise<void>;

export const REWIND_FIXTURES = ['checkpoints', 'rewind', 'session-rewound'];

export async function recordRewindHistories(
  h: OperationHarness,
  record: Record,
  wanted: (name: string) => boolean,
): Promise<void> {
  if (!REWIND_FIXTURES.some(wanted)) return;
  const { conversations } = await import('../test/support/conversations');
  const { startSessionHarnessOn } = await import('../test/support/session-harness');
  const s = startSessionHarnessOn(h);
  h.model.setScript(
    conversations({
      'fixture checkpoints': [
        { toolCalls: [{ name: 'bash', input: { command: 'echo one > one.txt' } }] },
        { toolCalls: [{ name: 'write_file', input: { path: 'two.txt', content: 'two\n' } }] },
        { toolCalls: [{ name: 'read_file', input: { path: 'two.txt' } }] },
        { text: 'checkpoints done' },
      ],
      'fixture rewound': [{ toolCalls: [{ name: 'bash', input: { command: 'ls' } }] }, { text: 'rewound done' }],
    }),
  );
  const original = s.newSession('fixture-checkpoints');
  const accepted = await s.submit(original, { prompt: 'fixture checkpoints', operationId: 'fixture-checkpoints' });
  await s.result(accepted.operationId);
  const forked = s.newSession('fixture-rewound');
  const rewound = await runRewind(h.temporal.client, {
    input: { operationId: accepted.operationId, toTurn: 2, sessionId: forked, prompt: 'fixture rewound' },
    taskQueue: h.brainQueue,
  });
  await s.result(rewound.operationId!);
  if (wanted('checkpoints')) await record('checkpoints', accepted.operationId);
  if (wanted('rewind')) await record('rewind', rewindWorkflowId(forked));
  if (wanted('session-rewound')) await record('session-rewound', sessionWorkflowId(forked));
  await s.close();
}
