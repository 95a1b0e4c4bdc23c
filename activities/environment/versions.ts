/**
 * Version arithmetic for toolchain resolution: dotted numeric versions, npm's range syntax as
 * `engines.node` uses it, and Python's version specifiers as `requires-python` uses them. Only what
 * those fields hold in practice; a range this module cannot read is an error naming it, never a guess.
 */

export type Version = [number, number, number];

/** `1.22.5` → [1, 22, 5]; `v22` → [22, 0, 0]; undefined when it is not a dotted number. */
export function parseVersion(text: string): Version | undefined {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(text.trim());
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)];
}

export function compareVersions(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

export function formatVersion(v: Version): string {
  return v.join('.');
}

/** The newest of `candidates` (exact versions) that `accepts` takes. */
export function newestMatching(candidates: string[], accepts: (v: Version) => boolean): string | undefined {
  let best: Version | undefined;
  let bestText: string | undefined;
  for (const text of candidates) {
    const v = parseVersion(text);
    if (!v || !accepts(v)) continue;
    if (!best || compareVersions(v, best) > 0) {
      best = v;
      bestText = text;
    }
  }
  return bestText;
}

type Comparator = (v: Version) => boolean;

/**
 * An npm version range (`>=18`, `^20.3.0`, `18.x || 20.x`, `>=18 <21`, `~22.1`, `22`, `*`) as a
 * predicate; undefined when the range uses syntax this reader does not know (prerelease tags, URLs).
 */
export function npmRange(range: string): Comparator | undefined {
  const alternatives = range.split('||').map((part) => part.trim());
  const sets: Comparator[][] = [];
  for (const alternative of alternatives) {
    // `1.2.3 - 2.3.4` (a hyphen range).
    const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(alternative);
    const tokens = hyphen ? [`>=${hyphen[1]}`, `<=${hyphen[2]}`] : alternative.split(/\s+/).filter(Boolean);
    const set: Comparator[] = [];
    for (const token of tokens.length ? tokens : ['*']) {
      const comparator = npmComparator(token);
      if (!comparator) return undefined;
      set.push(comparator);
    }
    sets.push(set);
  }
  return (v) => sets.some((set) => set.every((c) => c(v)));
}

function npmComparator(token: string): Comparator | undefined {
  const match = /^(>=|<=|>|<|=|\^|~)?\s*v?(\*|x|X|\d+)(?:\.(\*|x|X|\d+))?(?:\.(\*|x|X|\d+))?$/.exec(token);
  if (!match) return undefined;
  const op = match[1] ?? '';
  const parts = [match[2], match[3], match[4]];
  const wild = (p: string | undefined) => p === undefined || p === '*' || p === 'x' || p === 'X';
  const given = parts.findIndex(wild);
  const precision = given === -1 ? 3 : given; // how many parts are numbers
  const base: Version = [0, 1, 2].map((i) => (i < precision ? Number(parts[i]) : 0)) as Version;
  const cmp = (v: Version) => compareVersions(v, base);
  const upper = (level: number): Version =>
    level === 0 ? [base[0] + 1, 0, 0] : level === 1 ? [base[0], base[1] + 1, 0] : [base[0], base[1], base[2] + 1];
  if (precision === 0) return op === '<' || op === '>' ? () => false : () => true;
  switch (op) {
    case '>=':
      return (v) => cmp(v) >= 0;
    case '>':
      return precision === 3 ? (v) => cmp(v) > 0 : (v) => compareVersions(v, upper(precision - 1)) >= 0;
    case '<':
      return (v) => cmp(v) < 0;
    case '<=':
      return precision === 3 ? (v) => cmp(v) <= 0 : (v) => compareVersions(v, upper(precision - 1)) < 0;
    case '^': {
      const level = base[0] > 0 || precision === 1 ? 0 : base[1] > 0 || precision === 2 ? 1 : 2;
      return (v) => cmp(v) >= 0 && compareVersions(v, upper(level)) < 0;
    }
    case '~':
      return (v) => cmp(v) >= 0 && compareVersions(v, upper(Math.min(precision - 1, 1))) < 0;
    default:
      // `=`, or a bare version: exact when complete, a wildcard range when partial.
      return precision === 3 ? (v) => cmp(v) === 0 : (v) => cmp(v) >= 0 && compareVersions(v, upper(precision - 1)) < 0;
  }
}

/**
 * Python's `requires-python` (`>=3.8`, `>=3.9,<4`, `~=3.10`, `!=3.12.*`, `==3.11.*`) as a
 * predicate; undefined when unreadable.
 */
export function pythonSpecifier(spec: string): Comparator | undefined {
  const clauses = spec
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  const checks: Comparator[] = [];
  for (const clause of clauses) {
    const match = /^(~=|==|!=|>=|<=|>|<)\s*(\d+(?:\.\d+){0,2})(\.\*)?$/.exec(clause);
    if (!match) return undefined;
    const [, op, text, star] = match;
    const parts = text!.split('.').map(Number);
    const base = [parts[0]!, parts[1] ?? 0, parts[2] ?? 0] as Version;
    const prefix = (v: Version) => parts.every((p, i) => v[i] === p);
    switch (op) {
      case '==':
        checks.push(star ? prefix : (v) => compareVersions(v, base) === 0);
        break;
      case '!=':
        checks.push(star ? (v) => !prefix(v) : (v) => compareVersions(v, base) !== 0);
        break;
      case '>=':
        checks.push((v) => compareVersions(v, base) >= 0);
        break;
      case '<=':
        checks.push((v) => compareVersions(v, base) <= 0);
        break;
      case '>':
        checks.push((v) => compareVersions(v, base) > 0);
        break;
      case '<':
        checks.push((v) => compareVersions(v, base) < 0);
        break;
      default: {
        // `~=3.10` means >=3.10, ==3.*; `~=3.10.2` means >=3.10.2, ==3.10.*.
        if (parts.length < 2) return undefined;
        const head = parts.slice(0, -1);
        checks.push((v) => compareVersions(v, base) >= 0 && head.every((p, i) => v[i] === p));
      }
    }
  }
  return (v) => checks.every((c) => c(v));
}
