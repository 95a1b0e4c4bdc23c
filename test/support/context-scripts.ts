/**
 * Test support for context management: scripts that answer compaction calls with a summary, the
 * recorded steps of an operation (all its runs), and the request log cut at compactions.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { COMPACTION_REQUEST_MARKER } from '../../common/context';
import { readRecordedRun, type RecordedStep } from '../../common/recorded-steps';
import type { ScriptedRequest, ScriptedTurn } from '../../scripted-model/script';
import type { RecordedRequest } from '../../scripted-model/server';

/** Whether the request is a compaction's summary call (its last user message ends with the instruction). */
export function isCompactionRequest(request: ScriptedRequest): boolean {
  return request.lastUserText.includes(COMPACTION_REQUEST_MARKER);
}

function lastUserTextOf(body: unknown): string {
  const messages = (body as { messages?: Array<{ role: string; content: unknown }> } | null)?.messages ?? [];
  const last = messages[messages.length - 1];
  if (!last || last.role !== 'user' || !Array.isArray(last.content)) return '';
  return (last.content as Array<{ type: string; text?: string }>)
    .filter((block) => block.type === 'text')
    .map((block) => block.text ?? '')
    .join('\n');
}

export function isCompactionBody(body: unknown): boolean {
  return lastUserTextOf(body).includes(COMPACTION_REQUEST_MARKER);
}

/**
 * A script for a long run: `turns` model turns, each with `replyText` and one bash call printing
 * `outputChars` characters, then a final answer; compaction calls get a summary naming the turns
 * done so far. Counts the turns it answered itself, so it works across compactions.
 */
export function longRunScript(options: {
  turns: number;
  replyText?: (turn: number) => string;
  outputChars?: number;
  /** The bash command of a turn (default: print `outputChars` characters). */
  command?: (turn: number) => string | undefined;
  summary?: (compaction: number, turnsDone: number) => string;
}): (request: ScriptedRequest) => ScriptedTurn {
  let done = 0;
  let compactions = 0;
  const chars = options.outputChars ?? 400;
  return (request) => {
    if (isCompactionRequest(request)) {
      compactions += 1;
      return {
        label: `summary ${compactions}`,
        text:
          options.summary?.(compactions, done) ??
          `Summary ${compactions}: ${done} turns done, each ran one bash command.`,
      };
    }
    if (done >= options.turns) return { label: 'final answer', text: `all ${done} turns done` };
    done += 1;
    return {
      label: `turn ${done}`,
      ...(options.replyText ? { text: options.replyText(done) } : {}),
      toolCalls: [
        { name: 'bash', input: { command: options.command?.(done) ?? `printf 'turn ${done} %0${chars}d\\n' 0` } },
      ],
    };
  };
}

/** Every recorded context step of the operation, all runs (continue-as-new followed), oldest first. */
export async function recordedStepsOf(handle: WorkflowHandle): Promise<RecordedStep[]> {
  const runs: RecordedStep[][] = [];
  let runId: string | undefined = (await handle.describe()).runId;
  while (runId) {
    const history = await handle.client.getHandle(handle.workflowId, runId).fetchHistory();
    const run = readRecordedRun(history.events ?? []);
    runs.unshift(run.steps);
    runId = run.previousRunId;
  }
  return runs.flat();
}

/** Answered Messages API requests, cut into segments that each end with a compaction's summary call. */
export function segmentsBetweenCompactions(requests: readonly RecordedRequest[]): RecordedRequest[][] {
  const segments: RecordedRequest[][] = [[]];
  for (const request of requests) {
    if (request.path !== '/v1/messages' || request.status !== 200) continue;
    segments[segments.length - 1]!.push(request);
    if (isCompactionBody(request.body)) segments.push([]);
  }
  return segments.filter((segment) => segment.length > 0);
}

/** Prompt tokens the server counted for a request (uncached + cache write + cache read). */
export function promptOf(request: RecordedRequest): number {
  const u = request.usage;
  return u ? u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens : 0;
}
