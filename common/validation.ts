/**
 * Turns a zod error into one line that names each offending field, e.g.
 * `budget.maxTurns: expected number, received string; goal: required`.
 * Deterministic: used by workflow code.
 */
import type { z } from 'zod';

export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const field = issue.path.length ? issue.path.map(String).join('.') : '(input)';
      if (issue.code === 'unrecognized_keys') {
        const keys = (issue as { keys?: string[] }).keys ?? [];
        const prefix = issue.path.length ? `${field}.` : '';
        return keys.map((key) => `${prefix}${key}: unknown field (not allowed)`).join('; ');
      }
      return `${field}: ${issue.message}`;
    })
    .join('; ');
}
