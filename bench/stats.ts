/** Small statistics over samples (milliseconds, bytes): what the scenarios report. */

/** The value at quantile `q` (0–1) by linear interpolation between the nearest ranks; NaN when empty. */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const position = (sorted.length - 1) * Math.min(1, Math.max(0, q));
  const lower = Math.floor(position);
  const upper = Math.ceil(position);
  return sorted[lower]! + (sorted[upper]! - sorted[lower]!) * (position - lower);
}

export const median = (samples: readonly number[]): number => quantile(samples, 0.5);
export const p95 = (samples: readonly number[]): number => quantile(samples, 0.95);

export function mean(samples: readonly number[]): number {
  return samples.length === 0 ? Number.NaN : samples.reduce((sum, value) => sum + value, 0) / samples.length;
}

/** Rounds to `digits` decimals (JSON stays readable; NaN stays NaN). */
export function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** Differences between consecutive values: the gaps between timestamps. */
export function gaps(times: readonly number[]): number[] {
  return times.slice(1).map((time, index) => time - times[index]!);
}
