/**
 * Turns a zod error into one line that names each offending field, e.g.
 * `budget.maxTurns: expected a number, got a string; goal: required`.
 * Deterministic: used by workflow code.
 */
import type { z } from 'zod';

/** `input` (what was parsed) lets the message say what a field held instead of zod's wording. */
export function describeZodError(error: z.ZodError, input?: unknown): string {
  return error.issues
    .map((issue) => {
      const field = issue.path.length ? issue.path.map(String).join('.') : '(input)';
      if (issue.code === 'unrecognized_keys') {
        const keys = (issue as { keys?: string[] }).keys ?? [];
        const prefix = issue.path.length ? `${field}.` : '';
        return keys.map((key) => `${prefix}${key}: unknown field (not allowed)`).join('; ');
      }
      if (issue.code === 'invalid_type' && input !== undefined) {
        const value = valueAt(input, issue.path);
        const expected = issue.expected === 'int' ? 'an integer' : withArticle(issue.expected);
        if (value === undefined && issue.path.length) return `${field}: required (${expected})`;
        return `${field}: expected ${expected}, got ${describeValue(value)}`;
      }
      return `${field}: ${issue.message}`;
    })
    .join('; ');
}

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let value: unknown = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** `a string`, `null`, `an array`, `a non-integer number (1.5)`. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' && !Number.isInteger(value)) return `a non-integer number (${value})`;
  return withArticle(typeof value);
}

function withArticle(noun: string): string {
  return `${/^[aeiou]/.test(noun) ? 'an' : 'a'} ${noun}`;
}

/** UTF-8 length without Buffer or TextEncoder (this module runs in workflow code). */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return bytes;
}
