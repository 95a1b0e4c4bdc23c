/**
 * `agent checkpoints <operation>`: the checkpoints an operation recorded of its workspace, read from
 * its history. `agent rewind <operation> --to-turn N`: a new session whose lane continues the
 * operation's conversation as it was after turn N (or, `--code-only`, starts afresh) on a workspace
 * restored from that turn's checkpoint; the original stays as it is (`common/rewind.ts`).
 */
import { randomUUID } from 'node:crypto';
import { connectClient, workflowUrl } from '../client/connection';
import { requirePollers } from '../client/pollers';
import { operationCheckpoints, runRewind } from '../client/rewind';
import { Refused } from '../client/session';
import { CHECKPOINT_FAILURE_TYPES, isSkipped } from '../common/checkpoints';
import type { CheckpointRecord } from '../common/rewind-plan';
import { parseRewindInput, REWIND_FAILURE_TYPES, type RewindInput } from '../common/rewind';
import { isSessionId, SESSION_ID_RULE } from '../common/sandbox-names';
import type { RewindCommand } from './command-types';
import { cliSettings } from './settings';

export async function rewindCommand(command: RewindCommand): Promise<number> {
  const { temporal, queues } = cliSettings();
  const input = command.kind === 'rewind' ? rewindInputOf(command) : undefined;
  const { client, connection } = await connectClient(temporal);
  try {
    if (command.kind === 'checkpoints') {
      const records = await operationCheckpoints(client, command.operationId);
      if (command.json) console.log(JSON.stringify(records.map(jsonOf)));
      else console.log(describeCheckpoints(command.operationId, records));
      return 0;
    }
    const out = command.json ? process.stderr : process.stdout;
    await requirePollers(client, queues.brain);
    out.write(`rewinding ${command.operationId} to turn ${command.toTurn} into session ${input!.sessionId}…\n`);
    const result = await runRewind(client, { input: input!, taskQueue: queues.brain });
    out.write(
      `session ${result.sessionId} · lane ${result.lane}: ${result.files} files restored from the checkpoint ` +
        `${result.checkpoint.kind === 'base' ? 'before' : 'after'} turn ${result.checkpoint.kind === 'base' ? result.checkpoint.turn + 1 : result.checkpoint.turn} ` +
        `(${result.checkpoint.commit.slice(0, 12)})${command.codeOnly ? '' : `; the conversation continues after turn ${result.from.turn}`}\n`,
    );
    out.write(
      result.operationId
        ? `operation ${result.operationId} started; follow it with: agent events ${result.operationId} --follow\nWeb UI: ${workflowUrl(temporal, result.operationId)}\n`
        : `go on with: agent run --session ${result.sessionId} --lane ${result.lane} "<prompt>"\n`,
    );
    if (command.json)
      console.log(JSON.stringify({ sessionId: result.sessionId, lane: result.lane, operationId: result.operationId }));
    return 0;
  } catch (err) {
    if (err instanceof Refused) {
      console.error(`agent ${command.kind}: ${atFault(command, err)}${err.message}`);
      return 1;
    }
    throw err;
  } finally {
    await connection.close();
  }
}

/** The workflow's input from the flags, checked before anything is started (its problems name the flag). */
function rewindInputOf(command: Extract<RewindCommand, { kind: 'rewind' }>): RewindInput & { sessionId: string } {
  const sessionId = command.session ?? newSessionId();
  if (!isSessionId(sessionId)) throw new Error(`--session ${sessionId}: must be ${SESSION_ID_RULE}`);
  const input = {
    operationId: command.operationId,
    toTurn: command.toTurn,
    sessionId,
    ...(command.lane !== undefined ? { lane: command.lane } : {}),
    ...(command.prompt !== undefined ? { prompt: command.prompt } : {}),
    codeOnly: command.codeOnly,
  };
  const parsed = parseRewindInput(input);
  if (!parsed.ok) throw new Error(`agent rewind: ${flagNames(parsed.error)}`);
  return input;
}

/** The flag or argument a refusal is about, as its message's head. */
function atFault(command: RewindCommand, refusal: Refused): string {
  if (refusal.type === REWIND_FAILURE_TYPES.unknownOperation) return `<operation> ${command.operationId}: `;
  const aboutTurn: string[] = [REWIND_FAILURE_TYPES.noSuchTurn, REWIND_FAILURE_TYPES.noCheckpoint];
  if (command.kind !== 'rewind') return '';
  if (aboutTurn.includes(refusal.type)) return `--to-turn ${command.toTurn}: `;
  if (refusal.type === CHECKPOINT_FAILURE_TYPES.workspaceExists && command.session)
    return `--session ${command.session}: `;
  return '';
}

const FLAGS: Record<string, string> = {
  toTurn: '--to-turn',
  lane: '--lane',
  prompt: '--prompt',
  sessionId: '--session',
};

function flagNames(error: string): string {
  return error.replace(/\b(toTurn|lane|prompt|sessionId):/g, (_, field: string) => `${FLAGS[field]}:`);
}

function newSessionId(): string {
  return `rw-${new Date().toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-')}-${randomUUID().slice(0, 4)}`;
}

function jsonOf(record: CheckpointRecord): Record<string, unknown> {
  const { outcome, ...rest } = record;
  return { ...rest, ...(outcome ?? { pending: record.failure === undefined }) };
}

/** One line per checkpoint: its turn, when, what changed. */
export function describeCheckpoints(operationId: string, records: CheckpointRecord[]): string {
  if (records.length === 0)
    return `operation ${operationId} has no checkpoints (its tools never changed the workspace, or checkpoints were off)`;
  const lines = [`checkpoints of ${operationId}:`];
  for (const record of records) {
    const turn = record.kind === 'base' ? `before turn ${record.turn + 1}` : `turn ${record.turn}`;
    const outcome = record.outcome;
    if (!outcome) {
      lines.push(`  ${turn.padEnd(16)} ${record.failure ? `failed: ${record.failure}` : 'being recorded'}`);
    } else if (isSkipped(outcome)) {
      lines.push(`  ${turn.padEnd(16)} ${outcome.at}  skipped: ${outcome.skipped}`);
    } else {
      const files = `${outcome.filesChanged} file${outcome.filesChanged === 1 ? '' : 's'} changed`;
      const more = outcome.filesChanged > outcome.changed.length ? ', …' : '';
      const names = outcome.changed.length ? ` (${outcome.changed.join(', ')}${more})` : '';
      const unreadable = outcome.unreadable ? ` · ${outcome.unreadable} unreadable, left out` : '';
      lines.push(`  ${turn.padEnd(16)} ${outcome.at}  ${outcome.commit.slice(0, 12)}  ${files}${names}${unreadable}`);
    }
  }
  lines.push('', `go back to one with: agent rewind ${operationId} --to-turn N --prompt "…"`);
  return lines.join('\n');
}
