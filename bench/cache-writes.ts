/**
 * Where a run's prompt tokens that were not read from the cache came from, request by request: the
 * scripted server's request log (usage, and `cacheDetail`: the prefix sent before, the new tail)
 * labelled with the operation's recorded steps (model turns, the clear batch a turn carried,
 * compaction calls), matched by request id.
 *
 * Every prompt token of a request is read from the cache or not; the ones not read are the request's
 * new tail (the last reply and the tool results after it: content the model never saw as input) or
 * content sent again — or, on a request that finds nothing of its prompt sent before (the first of a
 * conversation, a cold cache, another model), the prefix it starts with (`start`). Content sent
 * again is the avoidable part, by cause:
 *  - `compaction`: the summary call's and the first request after a compaction (its new prefix);
 *  - `clearBatch`: a request carrying a clear batch (the prefix after the first cleared result);
 *  - `missed`: sent before in exactly that prefix, not read (a breakpoint moved or missing, past the
 *    lookback, expired);
 *  - `changed`: anything else the request changed before its tail (the system prompt, the tools,
 *    the model).
 */
import type { RecordedStep } from '../common/recorded-steps';
import type { RecordedRequest } from '../scripted-model/server';
import type { CacheWriteCauses, CacheWriteRow } from './results';

const promptOf = (r: RecordedRequest): number =>
  r.usage ? r.usage.input_tokens + r.usage.cache_creation_input_tokens + r.usage.cache_read_input_tokens : 0;

/** What a request was, from the operation's steps (absent: the plain loop's turns). */
function labelsOf(steps: readonly RecordedStep[]): Map<string, { label: string; kind: CacheWriteRow['kind'] }> {
  const labels = new Map<string, { label: string; kind: CacheWriteRow['kind'] }>();
  let afterCompaction = false;
  for (const step of steps) {
    const requestId = step.result?.requestId;
    if (step.kind === 'compaction') {
      if (requestId)
        labels.set(requestId, {
          label: `compaction ${step.input.compaction} (${step.input.reason})`,
          kind: 'compaction',
        });
      if (step.result) afterCompaction = true;
      continue;
    }
    if (!requestId) continue;
    const clear = step.input.clear;
    const kind: CacheWriteRow['kind'] = afterCompaction ? 'afterCompaction' : clear ? 'clearBatch' : 'turn';
    const what = clear ? ` + clear batch ${clear.batch} (${clear.toolUseIds.length} results)` : '';
    labels.set(requestId, {
      label: `turn ${step.input.turn}${afterCompaction ? ' after compaction' : ''}${what}`,
      kind,
    });
    afterCompaction = false;
  }
  return labels;
}

/** One row per answered request, in order. */
export function cacheWriteRows(
  requests: readonly RecordedRequest[],
  steps: readonly RecordedStep[] = [],
): CacheWriteRow[] {
  const labels = labelsOf(steps);
  return requests
    .filter((r) => r.path === '/v1/messages' && r.status === 200 && r.usage)
    .map((r, index) => {
      const u = r.usage!;
      const prompt = promptOf(r);
      const read = u.cache_read_input_tokens;
      const detail = r.cacheDetail ?? { seenTokens: read, tailTokens: prompt - read };
      const notRead = prompt - read;
      const tail = Math.min(notRead, detail.tailTokens);
      const missed = Math.max(0, Math.min(notRead - tail, detail.seenTokens - read));
      const start = detail.seenTokens === 0 && read === 0 ? notRead - tail : 0;
      const labelled = labels.get(r.requestId);
      return {
        index: index + 1,
        label: labelled?.label ?? `turn ${index + 1}`,
        kind: labelled?.kind ?? 'turn',
        prompt,
        cacheRead: read,
        cacheWrite: u.cache_creation_input_tokens,
        uncached: u.input_tokens,
        tail,
        start,
        missed,
        changed: notRead - tail - start - missed,
      };
    });
}

/** The not-read tokens of `rows` by cause (see the module comment); `tail` is the new content. */
export function cacheWriteCauses(rows: readonly CacheWriteRow[]): CacheWriteCauses {
  const causes: CacheWriteCauses = { tail: 0, start: 0, compaction: 0, clearBatch: 0, missed: 0, changed: 0 };
  for (const row of rows) {
    causes.tail += row.tail;
    causes.start += row.start;
    const again = row.missed + row.changed;
    if (row.kind === 'compaction' || row.kind === 'afterCompaction') causes.compaction += again;
    else if (row.kind === 'clearBatch') causes.clearBatch += again;
    else {
      causes.missed += row.missed;
      causes.changed += row.changed;
    }
  }
  return causes;
}
