/**
 * Completions the Temporal server refused, read from the brains' logs: a model answer the brain
 * received whole and reported, for an attempt the server had already given up on — its heartbeat
 * timed out while the history service was down (SIGKILLed) and the call was retried. The answer was
 * paid and no history holds it: the worker's SDK logs "Activity not found on completion" with the
 * attempt's task token, which names the workflow and the activity type. The ledger accepts such a
 * unit's shortfall only as exactly some of that brain's last answers for it (`checkLedger`).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BRAINS } from './fleet';

export interface RefusedCompletion {
  /** The API key of the brain process that was refused (`Fleet.keyOf`). */
  apiKey: string;
  workflowId: string;
  activityType: string;
  /** When the brain logged the refusal (ms since the epoch). */
  at: number;
}

const REFUSAL = /^(\S+)\s.*Activity not found on completion\..*task_token\S*TaskToken\(([A-Za-z0-9+/=]+)\)/;
// The SDK colours its log lines when it writes to a terminal-like stream.
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;

/** The refusals in the log files of `logDir` written by brain processes (`brain-1.2.log`, …). */
export function readRefusedCompletions(logDir: string): RefusedCompletion[] {
  const refused: RefusedCompletion[] = [];
  for (const file of fs.readdirSync(logDir).sort()) {
    const name = /^(.+)\.(\d+)\.log$/.exec(file);
    if (!name || !(BRAINS as readonly string[]).includes(name[1]!)) continue;
    const apiKey = `soak-${name[1]}.${name[2]}`;
    for (const line of fs.readFileSync(path.join(logDir, file), 'utf8').split('\n')) {
      const refusal = parseRefusal(line.replace(ANSI, ''), apiKey);
      if (refusal) refused.push(refusal);
    }
  }
  return refused;
}

/** One log line's refusal, if it is one. */
export function parseRefusal(line: string, apiKey: string): RefusedCompletion | undefined {
  const match = REFUSAL.exec(line);
  if (!match) return undefined;
  const at = Date.parse(match[1]!);
  const token = decodeTaskToken(Buffer.from(match[2]!, 'base64'));
  if (Number.isNaN(at) || !token) return undefined;
  return { apiKey, workflowId: token.workflowId, activityType: token.activityType, at };
}

/**
 * The workflow id (field 2) and activity type (field 8) of a server task token (the server's
 * `temporal.server.api.token.v1.Task` message); undefined when it does not parse as one.
 */
export function decodeTaskToken(bytes: Buffer): { workflowId: string; activityType: string } | undefined {
  const fields = new Map<number, string>();
  let at = 0;
  const varint = (): number | undefined => {
    let value = 0;
    for (let shift = 0; shift < 64; shift += 7) {
      if (at >= bytes.length) return undefined;
      const byte = bytes[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
    return undefined;
  };
  while (at < bytes.length) {
    const key = varint();
    if (key === undefined) return undefined;
    const field = Math.floor(key / 8);
    const wire = key % 8;
    if (wire === 0) {
      if (varint() === undefined) return undefined;
    } else if (wire === 2) {
      const length = varint();
      if (length === undefined || at + length > bytes.length) return undefined;
      fields.set(field, bytes.subarray(at, at + length).toString('utf8'));
      at += length;
    } else return undefined;
  }
  const workflowId = fields.get(2);
  const activityType = fields.get(8);
  return workflowId && activityType ? { workflowId, activityType } : undefined;
}
