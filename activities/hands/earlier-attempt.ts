/**
 * What a retried tool call finds of its earlier attempt, read from the sandbox's run files and
 * journal (see `journal.ts`): nothing worth keeping (run it), a finished run (return its recorded
 * result), or a run that died before recording one (report it interrupted). A run still in progress
 * is waited for, so a call never has two live copies.
 */
import type { Context } from '@temporalio/activity';
import type { Heartbeat } from '../heartbeat';
import type { AttemptCancellation } from './attempt-cancellation';
import { throwCancelled } from './failures';
import { decideReplay, outputPathOf } from './journal';
import { legacyRecordsOf, recordsOf } from './journal-store';
import { runStatus } from './run-records';
import type { ExecResult, SandboxCommands } from './sandbox-commands';
import type { ReplayPolicy } from '../../common/tools';

export type EarlierAttempt =
  | { kind: 'run' }
  | { kind: 'finished'; run: Extract<ExecResult, { kind: 'finished' }> }
  | { kind: 'interrupted'; attempt: number; pid?: number; partialOutput: Buffer; startedAt?: string };

const POLL_MS = 250;

/**
 * Decides, per `policy` (see `decideReplay`), from the latest earlier attempt of the call. Waits for
 * one still running (up to its `timeoutMs` plus 15 s, then calls it interrupted); a cancel request
 * while waiting kills it (see `attempt-cancellation.ts`).
 */
export async function earlierAttempt(input: {
  commands: SandboxCommands;
  sessionId: string;
  toolCallId: string;
  policy: ReplayPolicy;
  timeoutMs: number;
  ctx: Context | undefined;
  cancellation: AttemptCancellation;
  heartbeat: Heartbeat<Record<string, unknown>>;
}): Promise<EarlierAttempt> {
  const { commands, sessionId, toolCallId } = input;
  const records = recordsOf(toolCallId);
  const runBase = records.runBase;
  const deadline = Date.now() + input.timeoutMs + 15_000;
  for (;;) {
    const status = await runStatus(commands, sessionId, records, legacyRecordsOf(toolCallId));
    const decision = decideReplay(input.policy, status);
    switch (decision.action) {
      case 'run':
        return { kind: 'run' };
      case 'recorded': {
        const pid = decision.exit.pid;
        const process = { pid, pgid: pid, attempt: decision.attempt, runDir: `${runBase}/${decision.attempt}` };
        return {
          kind: 'finished',
          run: {
            kind: 'finished',
            exit: decision.exit,
            output: decision.output,
            process,
            // No path only in an older version's records (`legacyRecordsOf`): it copied the output there.
            outputPath: decision.exit.outputPath ?? outputPathOf(toolCallId),
          },
        };
      }
      case 'interrupted':
        return {
          kind: 'interrupted',
          attempt: decision.attempt,
          partialOutput: decision.partialOutput,
          ...(decision.pid ? { pid: decision.pid } : {}),
          ...(decision.startedAt ? { startedAt: decision.startedAt } : {}),
        };
      case 'wait': {
        input.heartbeat.merge({ waitingFor: decision.pid ?? 'starting', attempt: status.attempt });
        if (input.cancellation.aborted) {
          if (decision.pid && input.cancellation.kill?.aborted)
            await commands.kill(sessionId, decision.pid, { runDir: `${runBase}/${status.attempt}` });
          await throwCancelled(input.ctx);
        }
        if (Date.now() > deadline) {
          return {
            kind: 'interrupted',
            attempt: status.attempt,
            partialOutput: status.output,
            ...(decision.pid ? { pid: decision.pid } : {}),
          };
        }
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    }
  }
}
