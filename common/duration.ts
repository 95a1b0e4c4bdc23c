/** Durations on the command line and in settings (`90s`, `1h30m`). Pure. */

/** `90s`, `30m`, `1h`, `2d`, `1h30m`, or plain milliseconds. */
export function parseDuration(text: string): number {
  if (/^\d+$/.test(text)) return Number(text);
  const units: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    total += Number(m[1]) * units[m[2]];
    matched = re.lastIndex;
  }
  if (!text || matched !== text.length)
    throw new Error(`not a duration: ${JSON.stringify(text)} (use e.g. 90s, 30m, 1h, 2d)`);
  return total;
}
