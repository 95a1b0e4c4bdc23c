/**
 * Budgets that ask. An operation's or a coding task's budget (`budget.onExceeded`) either ends the
 * run when it is spent (`end`, the default) or pauses it with a waiting approval (`ask`):
 *
 *   budget exceeded: 812k of 800k tokens; approve to allow 200k more
 *
 * Approving (`agent approve <id> budget-<n>`, the same `approve` Update as a tool call's) allows a
 * quarter of the limit as it was set more than was used — the overshoot is not taken out of the
 * extension — and the run goes on; denying it, or nobody deciding within `approvalTimeoutMs`, ends
 * the run as a spent budget does. The deadline is extended from the moment of the approval (the
 * wait itself does not eat into the extension).
 *
 * Deterministic (imported by workflow code): types, zod and arithmetic only.
 */
import { z } from 'zod';

export const BUDGET_ON_EXCEEDED = ['end', 'ask'] as const;
export type BudgetOnExceeded = (typeof BUDGET_ON_EXCEEDED)[number];

/** `budget.onExceeded` of an operation's or a task's input; absent means `end`. */
export const onExceededSchema = z.enum(BUDGET_ON_EXCEEDED, 'must be "end" or "ask"').optional();

/** The budgets that can ask (a task's `featuresPerRun` is a plan, not a limit: it never asks). */
export type BudgetName = 'turns' | 'tokens' | 'cost' | 'deadline';

/** What an approval adds: this share of the limit as it was set. */
export const BUDGET_EXTENSION_SHARE = 0.25;

/** A budget found spent: its name, what was used and the limit in force (extensions included). */
export interface SpentBudget {
  name: BudgetName;
  /** Turns, tokens, US dollars or milliseconds since the start. */
  used: number;
  limit: number;
}

/** What approvals added to each limit (carried across continue-as-new). */
export interface BudgetExtensions {
  turns?: number;
  tokens?: number;
  costUsd?: number;
  durationMs?: number;
}

/** How many budget approvals were asked so far and what the approved ones added. */
export interface BudgetAsks {
  asked: number;
  added: BudgetExtensions;
}

/** The limits a budget sets, by name (undefined: not set). */
export interface BudgetLimits {
  turns?: number;
  tokens?: number;
  cost?: number;
  deadline?: number;
}

const EXTENSION_FIELD: Record<BudgetName, keyof BudgetExtensions> = {
  turns: 'turns',
  tokens: 'tokens',
  cost: 'costUsd',
  deadline: 'durationMs',
};

/** The limits as set plus what approvals added. */
export function extendedLimits(set: BudgetLimits, asks: Readonly<BudgetAsks> | undefined): BudgetLimits {
  const added = asks?.added ?? {};
  const plus = (name: BudgetName): number | undefined => {
    const limit = set[name];
    return limit === undefined ? undefined : limit + (added[EXTENSION_FIELD[name]] ?? 0);
  };
  return { turns: plus('turns'), tokens: plus('tokens'), cost: plus('cost'), deadline: plus('deadline') };
}

/** What one approval adds to the budget `name` whose limit was set to `limit`. */
export function budgetExtension(name: BudgetName, limit: number): number {
  const share = limit * BUDGET_EXTENSION_SHARE;
  if (name === 'cost') return Math.max(0.000001, Math.round(share * 1e6) / 1e6);
  return Math.max(1, Math.ceil(share));
}

/**
 * The asks after an approval of `spent`: the limit moves to what was used plus `extension` — for the
 * deadline, what was used when the approval came (`usedNowMs`, so the extension counts from then).
 */
export function approvedExtension(
  asks: { readonly asked: number; readonly added: Readonly<BudgetExtensions> },
  spent: SpentBudget,
  extension: number,
  usedNowMs?: number,
): BudgetAsks {
  const field = EXTENSION_FIELD[spent.name];
  const used = spent.name === 'deadline' && usedNowMs !== undefined ? Math.max(usedNowMs, spent.used) : spent.used;
  const extra = Math.max(0, used - spent.limit) + extension;
  return { ...asks, added: { ...asks.added, [field]: (asks.added[field] ?? 0) + extra } };
}

/** The id of the n-th budget approval of a run (1-based): `budget-1`, `budget-2`, … */
export const budgetApprovalId = (n: number): string => `budget-${n}`;

/** Whether an approval id names a budget's wait rather than a tool call's. */
export const isBudgetApprovalId = (id: string): boolean => /^budget-\d+$/.test(id);

/** What a budget approval shows (status, details, events): `budget exceeded: 812k of 800k tokens; approve to allow 200k more`. */
export function budgetAskSummary(spent: SpentBudget, extension: number): string {
  const amount = (value: number) => formatAmount(spent.name, value);
  return `budget exceeded: ${amount(spent.used)} of ${amount(spent.limit)}${unit(spent.name)}; approve to allow ${amount(extension)} more`;
}

function unit(name: BudgetName): string {
  return name === 'tokens' ? ' tokens' : name === 'turns' ? ' turns' : '';
}

function formatAmount(name: BudgetName, value: number): string {
  switch (name) {
    case 'tokens':
      return compactCount(value);
    case 'turns':
      return String(value);
    case 'cost':
      return `$${value < 1 ? value.toFixed(4) : value.toFixed(2)}`;
    case 'deadline':
      return compactDuration(value);
  }
}

function compactCount(n: number): string {
  if (n >= 1_000_000) return `${trim(n / 1_000_000)}M`;
  if (n >= 1_000) return `${trim(n / 1_000)}k`;
  return String(n);
}

function compactDuration(ms: number): string {
  if (ms >= 3_600_000) return `${trim(ms / 3_600_000)} h`;
  if (ms >= 60_000) return `${trim(ms / 60_000)} min`;
  return `${trim(ms / 1_000)} s`;
}

/** At most one decimal below 100, none when whole or above: 812.4 → 812, 2.5 → 2.5, 12.46 → 12.5. */
function trim(value: number): string {
  const rounded = value >= 100 ? Math.round(value) : Math.round(value * 10) / 10;
  return Number.isInteger(rounded) ? String(rounded) : rounded.toFixed(1);
}
