/**
 * The feature list of a coding task: `feature_list.json` at the repository root, written by the
 * initializer operation and owned by the harness from then on.
 *
 *   [{ "id": "slug", "category": "command", "description": "…", "steps": ["…"],
 *      "verify": "test \"$(node bin/cli.js slug 'A b')\" = a-b", "passes": false }, …]
 *
 * `verify` is a shell command run in the sandbox that exits 0 when the feature works. `passes` is
 * written by the harness only, after its own verification. The harness keeps the list it accepted
 * (its record) and compares the file with it after every operation: a feature deleted, added,
 * reworded, re-ordered or with a changed `passes` flag is a violation, and the file is restored.
 *
 * Deterministic: zod and pure functions (used by workflow code and by the hands).
 */
import { z } from 'zod';

export const FEATURE_LIST_FILE = 'feature_list.json';
export const HANDOFF_FILE = 'HANDOFF.md';
export const INIT_SCRIPT_FILE = 'init.sh';

export const FEATURE_ID_PATTERN = /^[A-Za-z0-9](?:[A-Za-z0-9_-]|\.(?!\.)){0,63}(?<!\.)$/;
export const FEATURE_ID_RULE =
  "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, without '..' or a final '.'";
/** The most features one list may hold. */
export const MAX_FEATURES = 500;

export const featureSchema = z.strictObject({
  id: z
    .string()
    .regex(FEATURE_ID_PATTERN, `must be ${FEATURE_ID_RULE}`)
    .refine((id) => !id.endsWith('.lock'), `must be ${FEATURE_ID_RULE}, not ending in .lock`),
  category: z.string().trim().min(1, 'must be a non-empty string'),
  description: z.string().trim().min(1, 'must be a non-empty string'),
  steps: z.array(z.string().trim().min(1, 'must be a non-empty string')),
  verify: z.string().trim().min(1, 'must be a non-empty shell command').optional(),
  passes: z.boolean(),
});

export type Feature = z.output<typeof featureSchema>;

export type FeatureListParse = { ok: true; features: Feature[] } | { ok: false; error: string };

/**
 * Parses the text of `feature_list.json`. Errors name the entry and field, e.g.
 * `feature_list.json[2].steps: expected array, received string`.
 */
export function parseFeatureList(text: string): FeatureListParse {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `${FEATURE_LIST_FILE}: not valid JSON (${(err as Error).message})` };
  }
  if (!Array.isArray(raw)) return { ok: false, error: `${FEATURE_LIST_FILE}: must be a JSON array of features` };
  if (raw.length === 0) return { ok: false, error: `${FEATURE_LIST_FILE}: the list is empty` };
  if (raw.length > MAX_FEATURES)
    return { ok: false, error: `${FEATURE_LIST_FILE}: ${raw.length} features, at most ${MAX_FEATURES}` };
  const features: Feature[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  raw.forEach((entry, index) => {
    const parsed = featureSchema.safeParse(entry);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) problems.push(`${entryField(index, issue)}: ${issueMessage(issue)}`);
      return;
    }
    if (seen.has(parsed.data.id))
      problems.push(`${FEATURE_LIST_FILE}[${index}].id: duplicate id ${JSON.stringify(parsed.data.id)}`);
    seen.add(parsed.data.id);
    features.push(parsed.data);
  });
  if (problems.length > 0) return { ok: false, error: problems.slice(0, 10).join('; ') };
  return { ok: true, features };
}

function entryField(index: number, issue: z.core.$ZodIssue): string {
  const path = issue.path.map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`)).join('');
  return `${FEATURE_LIST_FILE}[${index}]${path}`;
}

function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') {
    const keys = (issue as { keys?: string[] }).keys ?? [];
    return `unknown field${keys.length > 1 ? 's' : ''} ${keys.map((key) => JSON.stringify(key)).join(', ')} (allowed: id, category, description, steps, verify, passes)`;
  }
  return issue.message;
}

/**
 * The checks the harness adds when it accepts an initializer's list: without a task-wide verify
 * command every feature needs its own, and no feature may start out passing.
 */
export function checkNewFeatureList(features: Feature[], taskVerify: string | undefined): string | undefined {
  const problems: string[] = [];
  features.forEach((feature, index) => {
    if (!taskVerify && !feature.verify)
      problems.push(`${FEATURE_LIST_FILE}[${index}].verify: required, because the task has no verify command`);
  });
  return problems.length > 0 ? problems.slice(0, 10).join('; ') : undefined;
}

/** The file's text as the harness writes it: fixed key order, two-space indent, final newline. */
export function featureListText(features: readonly Feature[]): string {
  const ordered = features.map((f) => ({
    id: f.id,
    category: f.category,
    description: f.description,
    steps: f.steps,
    ...(f.verify !== undefined ? { verify: f.verify } : {}),
    passes: f.passes,
  }));
  return `${JSON.stringify(ordered, null, 2)}\n`;
}

/** One way the file in the workspace differs from the harness's record. */
export type FeatureListViolation =
  | { kind: 'file-missing' }
  | { kind: 'unparseable'; detail: string }
  | { kind: 'deleted'; featureId: string }
  | { kind: 'added'; featureId: string }
  | { kind: 'reworded'; featureId: string; fields: string[] }
  | { kind: 'reordered' }
  | { kind: 'passes-changed'; featureId: string; to: boolean };

/**
 * Compares the workspace's `feature_list.json` (its text, or undefined when the file is missing)
 * with the record. Differences of formatting alone are not violations.
 */
export function compareFeatureList(record: readonly Feature[], text: string | undefined): FeatureListViolation[] {
  if (text === undefined) return [{ kind: 'file-missing' }];
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return [{ kind: 'unparseable', detail: `not valid JSON (${(err as Error).message})` }];
  }
  if (!Array.isArray(raw)) return [{ kind: 'unparseable', detail: 'not a JSON array' }];
  const found = new Map<string, Record<string, unknown>>();
  const order: string[] = [];
  const violations: FeatureListViolation[] = [];
  for (const entry of raw) {
    if (entry === null || typeof entry !== 'object' || typeof (entry as { id?: unknown }).id !== 'string') {
      return [{ kind: 'unparseable', detail: 'an entry is not an object with a string id' }];
    }
    const id = (entry as { id: string }).id;
    if (found.has(id)) {
      violations.push({ kind: 'added', featureId: id });
      continue;
    }
    order.push(id);
    found.set(id, entry as Record<string, unknown>);
  }
  const recordIds = new Set(record.map((f) => f.id));
  for (const feature of record) {
    const entry = found.get(feature.id);
    if (!entry) {
      violations.push({ kind: 'deleted', featureId: feature.id });
      continue;
    }
    const fields = changedFields(feature, entry);
    if (fields.length > 0) violations.push({ kind: 'reworded', featureId: feature.id, fields });
    if (entry.passes !== feature.passes)
      violations.push({ kind: 'passes-changed', featureId: feature.id, to: entry.passes === true });
  }
  for (const id of order) if (!recordIds.has(id)) violations.push({ kind: 'added', featureId: id });
  const kept = order.filter((id) => recordIds.has(id));
  const expected = record.map((f) => f.id).filter((id) => found.has(id));
  if (kept.join('\n') !== expected.join('\n')) violations.push({ kind: 'reordered' });
  return violations;
}

function changedFields(feature: Feature, entry: Record<string, unknown>): string[] {
  const fields: string[] = [];
  if (entry.category !== feature.category) fields.push('category');
  if (entry.description !== feature.description) fields.push('description');
  if (JSON.stringify(entry.steps) !== JSON.stringify(feature.steps)) fields.push('steps');
  if ((entry.verify ?? undefined) !== feature.verify) fields.push('verify');
  const extra = Object.keys(entry).filter(
    (key) => !['id', 'category', 'description', 'steps', 'verify', 'passes'].includes(key),
  );
  return [...fields, ...extra];
}

/** One line per violation, for the report and the next operation's context. */
export function describeViolation(violation: FeatureListViolation): string {
  switch (violation.kind) {
    case 'file-missing':
      return `${FEATURE_LIST_FILE} was deleted`;
    case 'unparseable':
      return `${FEATURE_LIST_FILE} was made unreadable (${violation.detail})`;
    case 'deleted':
      return `feature \`${violation.featureId}\` was deleted`;
    case 'added':
      return `feature \`${violation.featureId}\` was added`;
    case 'reworded':
      return `feature \`${violation.featureId}\` was reworded (${violation.fields.join(', ')})`;
    case 'reordered':
      return 'the features were re-ordered';
    case 'passes-changed':
      return `\`passes\` of \`${violation.featureId}\` was set to ${violation.to} by the agent`;
  }
}
