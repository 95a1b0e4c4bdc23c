/**
 * The project's custom search attributes, registered on every server we start and upserted by the
 * workflows. Adding one is a one-line change here; the dev-server launcher and the tests read this list.
 *
 * Deterministic and dependency-light: imported by workflow code.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const SEARCH_ATTRIBUTES = {
  /** Operation state: one of `AGENT_STATUSES` (a session: running). */
  status: defineSearchAttributeKey('AgentStatus', SearchAttributeType.KEYWORD),
  /** The repository the operation works on (path or URL). */
  repo: defineSearchAttributeKey('AgentRepo', SearchAttributeType.KEYWORD),
  /** The lane of the session the operation runs on (`main`, `subagent:<id>`, ...). */
  lane: defineSearchAttributeKey('AgentLane', SearchAttributeType.KEYWORD),
  /** Kind of workflow: run | compaction | coding-task | session | pull-request | forge-event | forge-poller. */
  kind: defineSearchAttributeKey('AgentKind', SearchAttributeType.KEYWORD),
  /** Total tokens (input + cache write + cache read + output) consumed so far. */
  tokens: defineSearchAttributeKey('AgentTokens', SearchAttributeType.INT),
  /** Estimated cost so far in US dollars. */
  costUsd: defineSearchAttributeKey('AgentCostUsd', SearchAttributeType.DOUBLE),
  /** Model turns taken so far. */
  turns: defineSearchAttributeKey('AgentTurns', SearchAttributeType.INT),
  /** The pull request a workflow looks after or works for: `<forge>:<owner>/<name>#<number>`. */
  pullRequest: defineSearchAttributeKey('AgentPr', SearchAttributeType.KEYWORD),
  /** A pull-request loop's state: waiting | working | paused | merged | closed | ended. */
  pullRequestState: defineSearchAttributeKey('AgentPrState', SearchAttributeType.KEYWORD),
} as const;

/**
 * The values of `AgentStatus`. `stuck` and `waiting-approval` are set while the run is open and
 * cleared (back to `running`) when the cause goes away; a run that ended by termination or a
 * workflow timeout keeps its last value, so queries for live runs add `ExecutionStatus = "Running"`.
 */
export const AGENT_STATUSES = ['running', 'waiting-approval', 'stuck', 'completed', 'failed', 'aborted'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/** `NAME=Type` pairs as the `temporal server start-dev --search-attribute` flag expects them. */
export function searchAttributeFlags(): string[] {
  return Object.values(SEARCH_ATTRIBUTES).map((key) => `${key.name}=${cliTypeName(key.type)}`);
}

function cliTypeName(type: SearchAttributeType): string {
  switch (type) {
    case SearchAttributeType.KEYWORD:
      return 'Keyword';
    case SearchAttributeType.TEXT:
      return 'Text';
    case SearchAttributeType.INT:
      return 'Int';
    case SearchAttributeType.DOUBLE:
      return 'Double';
    case SearchAttributeType.BOOL:
      return 'Bool';
    case SearchAttributeType.DATETIME:
      return 'Datetime';
    case SearchAttributeType.KEYWORD_LIST:
      return 'KeywordList';
  }
}
