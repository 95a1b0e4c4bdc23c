/**
 * `verifyWorkspace`: the harness's verification of a feature, in the sandbox, as the harness's own
 * activity (not a model tool call). The commands come from the harness's record (the feature's
 * `verify` and the task's regression command as they were at initialization), never from files the
 * agent can edit. They run in order under the run wrapper with a time limit; the first failure
 * stops the rest. Re-running converges, so a retried attempt simply runs them again.
 */
import { CancelledFailure } from '@temporalio/common';
import type { CheckOutcome, VerifyInput, VerifyResult } from '../../common/repo';
import { currentActivity } from '../heartbeat';
import { JOURNAL_DIR } from '../hands/journal-store';
import { SandboxError } from '../hands/docker-calls';
import type { RepoContext } from './deps';
import { toRepoFailure } from './failures';

const TAIL_BYTES = 3_000;
const CAPTURE_BYTES = 1024 * 1024;

export async function verifyWorkspace(ctx: RepoContext, input: VerifyInput): Promise<VerifyResult> {
  const activity = currentActivity();
  const key = input.key.replace(/[^A-Za-z0-9_.-]/g, '-');
  try {
    await ctx.sandboxes.lifecycle.ensure(input.sessionId);
    const checks: CheckOutcome[] = [];
    for (const check of input.checks) {
      const result = await ctx.sandboxes.commands.exec(input.sessionId, {
        command: check.command,
        // Beside the tool-call journal, out of the agent's reach: its commands cannot plant or erase a result.
        runBase: `${JOURNAL_DIR}/verify/${key}/${check.name}`,
        timeoutMs: input.timeoutMs,
        maxOutputBytes: CAPTURE_BYTES,
        signal: activity?.cancellationSignal,
      });
      if (result.kind === 'lost') throw new SandboxError('lost', result.reason);
      if (result.kind === 'executor-lost') throw new SandboxError('unavailable', result.reason);
      if (result.kind !== 'finished') throw new SandboxError('failed', 'the verification did not run');
      if (result.exit.cancelled) throw new CancelledFailure('verification cancelled');
      const outcome: CheckOutcome = {
        ...check,
        exitCode: result.exit.exitCode,
        timedOut: result.exit.timedOut,
        outputTail: tail(result.output),
      };
      checks.push(outcome);
      if (outcome.exitCode !== 0 || outcome.timedOut) return { passed: false, checks };
    }
    return { passed: true, checks };
  } catch (err) {
    throw toRepoFailure(err);
  }
}

function tail(output: Buffer): string {
  if (output.length <= TAIL_BYTES) return output.toString('utf8');
  return `[…]\n${output.subarray(output.length - TAIL_BYTES).toString('utf8')}`;
}
