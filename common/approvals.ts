/**
 * Tool-call approval policies: which calls run at once (`auto`), wait for a person (`ask`), or are
 * refused (`deny`). Set per operation (input field `approvals`) or per session (its defaults).
 *
 * Rules are a map whose keys are a tool name (`"write_file"`) or a tool name and a regular expression
 * matched against the call's main argument (`"bash:/git push|rm -rf \\//"`, optional flags after the
 * closing slash: `"bash:/curl/i"`); the values are `auto | ask | deny`. A call takes:
 *  1. among the pattern rules of its tool that match, the most restrictive (deny > ask > auto);
 *  2. otherwise the rule for its tool name;
 *  3. otherwise the `"*"` rule;
 *  4. otherwise `auto`.
 * So `{"bash": "ask", "bash:/^ls /": "auto"}` asks for every command except listings, and
 * `{"bash:/git push/": "ask", "bash:/push --force/": "deny"}` denies a force push.
 *
 * Patterns are a convenience for a person supervising the agent, not a security boundary: a command
 * can be written many ways. The sandbox (no network, no credentials) is the boundary.
 *
 * Deterministic: imported by workflow code.
 */
import { defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import type { SpentBudget } from './budget';

export const APPROVAL_POLICIES = ['auto', 'ask', 'deny'] as const;
export type ApprovalPolicy = (typeof APPROVAL_POLICIES)[number];

/** Longest pattern accepted (patterns run inside workflow code on every matching call). */
export const APPROVAL_PATTERN_MAX = 500;
const RULE_KEY = /^([A-Za-z_][A-Za-z0-9_]*|\*)(?::\/(.+)\/([imsu]*))?$/s;

export type ApprovalRules = Record<string, ApprovalPolicy>;

interface ParsedRule {
  tool: string;
  pattern?: RegExp;
  policy: ApprovalPolicy;
  key: string;
}

/** Parses one rule key; a string error names what is wrong with it. */
function parseRuleKey(key: string, knownTools: readonly string[]): { tool: string; pattern?: RegExp } | string {
  const match = RULE_KEY.exec(key);
  if (!match) return 'must be a tool name or "<tool>:/<regex>/"';
  const [, tool, source, flags] = match;
  if (tool !== '*' && !knownTools.includes(tool)) return `unknown tool "${tool}" (tools: ${knownTools.join(', ')})`;
  if (tool === '*' && source !== undefined) return '"*" takes no pattern';
  if (source === undefined) return { tool };
  if (source.length > APPROVAL_PATTERN_MAX) return `the pattern is longer than ${APPROVAL_PATTERN_MAX} characters`;
  try {
    return { tool, pattern: new RegExp(source, flags) };
  } catch (err) {
    return `invalid regular expression: ${(err as Error).message}`;
  }
}

/** The schema of an `approvals` map, checked against the tool catalogue's names. */
export function approvalRulesSchema(knownTools: readonly string[]) {
  return z.record(z.string(), z.enum(APPROVAL_POLICIES, 'must be auto, ask or deny')).superRefine((rules, ctx) => {
    for (const key of Object.keys(rules)) {
      const parsed = parseRuleKey(key, knownTools);
      if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', path: [key], message: parsed });
    }
  });
}

const RANK: Record<ApprovalPolicy, number> = { auto: 0, ask: 1, deny: 2 };

export interface ApprovalDecision {
  policy: ApprovalPolicy;
  /** The rule that decided (`"bash:/git push/"`), absent for the default. */
  rule?: string;
}

/** The policy for one call (see the module comment for the order). Rules must have passed the schema. */
export function approvalPolicyFor(
  rules: ApprovalRules | undefined,
  tool: string,
  mainArgument: string,
): ApprovalDecision {
  if (!rules) return { policy: 'auto' };
  const parsed: ParsedRule[] = [];
  for (const [key, policy] of Object.entries(rules)) {
    const rule = parseRuleKey(key, [tool]);
    if (typeof rule !== 'string') parsed.push({ ...rule, policy, key });
  }
  let best: ParsedRule | undefined;
  for (const rule of parsed) {
    if (rule.tool !== tool || !rule.pattern || !rule.pattern.test(mainArgument)) continue;
    if (!best || RANK[rule.policy] > RANK[best.policy]) best = rule;
  }
  best ??= parsed.find((rule) => rule.tool === tool && !rule.pattern) ?? parsed.find((rule) => rule.tool === '*');
  return best ? { policy: best.policy, rule: best.key } : { policy: 'auto' };
}

/** Merges session defaults with an operation's own rules (the operation's keys win). */
export function mergeApprovalRules(
  base: ApprovalRules | undefined,
  own: ApprovalRules | undefined,
): ApprovalRules | undefined {
  if (!base) return own;
  if (!own) return base;
  return { ...base, ...own };
}

// ---- The operation's side: what waits, and the Update that decides it ----

/**
 * A tool call — or a spent budget (`common/budget.ts`) — waiting for a person (`status.waitingApproval`,
 * the Web UI's current details). A budget's wait has the id `budget-<n>` and the tool `budget`.
 */
export interface WaitingApproval {
  toolCallId: string;
  tool: string;
  /** `bash: git push origin main` */
  summary: string;
  /** The rule that asked. */
  rule?: string;
  requestedAt: string;
  /** When the call is denied if nobody decides. */
  timeoutAt: string;
  /** For a spent budget: which, how much was used of what limit, and what approving adds. */
  budget?: SpentBudget & { extension: number };
}

export interface ApprovalDecisionInput {
  toolCallId: string;
  approve: boolean;
  /** Why (sent to the model with a denial). */
  reason?: string;
}

/** What is wrong with an `approve` Update's payload, naming the field; undefined when it is well formed. */
export function approvalDecisionProblem(raw: unknown): string | undefined {
  const input = raw as Partial<ApprovalDecisionInput> | undefined;
  if (typeof input?.toolCallId !== 'string' || !input.toolCallId.trim())
    return 'toolCallId: must be a non-empty string';
  if (typeof input.approve !== 'boolean') return 'approve: must be true or false';
  if (input.reason !== undefined && (typeof input.reason !== 'string' || input.reason.length > 2_000))
    return 'reason: must be a string of at most 2000 characters';
  return undefined;
}

export interface ApprovalDecided {
  toolCallId: string;
  decision: 'approved' | 'denied';
}

/** `agent approve <operationId> <toolCallId> [--deny "why"]`. */
export const approveUpdate = defineUpdate<ApprovalDecided, [ApprovalDecisionInput]>('approve');

/** The `type` of the ApplicationFailures the `approve` validator rejects with. */
export const APPROVAL_FAILURE_TYPES = {
  invalid: 'InvalidApproval',
  unknownCall: 'UnknownToolCall',
  notWaiting: 'ApprovalNotWaiting',
  alreadyDecided: 'ApprovalAlreadyDecided',
  operationEnded: 'OperationEnded',
} as const;

/** Default and maximum time an `ask` call waits before it is denied. */
export const APPROVAL_TIMEOUT_DEFAULT_MS = 24 * 3_600_000;
export const APPROVAL_TIMEOUT_MAX_MS = 7 * 24 * 3_600_000;
