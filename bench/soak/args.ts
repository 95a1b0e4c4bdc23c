/** Command-line arguments of `npm run soak` (a pure function, tested). */
import { cliFlags } from '../cli-flags';

export interface SoakArgs {
  minutes: number;
  /** Absent: a random one, printed and in the report. */
  seed?: string;
  concurrency: number;
  /** Where soak-latest.json and soak-latest.md go. */
  outDir: string;
  help: boolean;
}

export const SOAK_USAGE = `usage: npm run soak -- --minutes N [--seed S] [--concurrency K] [--out DIR]

  --minutes N      how long the load and the faults run (then the work drains); e.g. 3, 10, 60
  --seed S         the seed of the fault schedule and the work (default: a random one, printed)
  --concurrency K  at most K units of work at once (default 6, at least 3)
  --out DIR        write soak-latest.json and soak-latest.md there (default bench/results)

Runs on the Temporal cluster of \`npm run cluster\` (started when it is not running, and stopped
again), with two brain workers and two hands hosts on two Docker engines; as root on Linux (a second
dockerd, loop devices for workspace quotas). See docs/benchmark.md#the-chaos-soak.`;

export function parseSoakArgs(argv: readonly string[], defaultOutDir: string): SoakArgs | { error: string } {
  const args: SoakArgs = { minutes: Number.NaN, concurrency: 6, outDir: defaultOutDir, help: false };
  for (const { arg, flag, value } of cliFlags(argv)) {
    switch (flag) {
      case '--minutes': {
        const minutes = Number(value());
        if (!(minutes > 0 && minutes <= 24 * 60))
          return { error: '--minutes needs a number of minutes above 0 (at most 1440)' };
        args.minutes = minutes;
        break;
      }
      case '--seed': {
        const seed = value();
        if (!seed || !/^[A-Za-z0-9._-]{1,64}$/.test(seed))
          return { error: "--seed needs 1-64 letters, digits, '.', '_' or '-'" };
        args.seed = seed;
        break;
      }
      case '--concurrency': {
        const k = Number(value());
        if (!Number.isInteger(k) || k < 3 || k > 64)
          return { error: '--concurrency needs a whole number from 3 to 64' };
        args.concurrency = k;
        break;
      }
      case '--out': {
        const dir = value();
        if (!dir) return { error: '--out needs a directory' };
        args.outDir = dir;
        break;
      }
      case '--help':
      case '-h':
        args.help = true;
        break;
      default:
        return { error: `unknown argument ${arg}` };
    }
  }
  if (!args.help && Number.isNaN(args.minutes)) return { error: '--minutes is required (e.g. --minutes 10)' };
  return args;
}
