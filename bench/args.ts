/** Command-line arguments of `npm run bench` (a pure function, tested). */
import { cliFlags } from './cli-flags';
import { SCENARIOS, type ScenarioName } from './results';
import type { ProfileName } from './profiles';

export interface BenchArgs {
  profile: ProfileName;
  scenarios: ScenarioName[];
  /** Where latest.json / latest.md / latest.svg go. */
  outDir: string;
  help: boolean;
  /** Re-render latest.md and latest.svg from this results JSON instead of running anything. */
  render?: string;
  /** Write CPU profiles of the worker process during the overhead scenario (`--profile`). */
  cpuProfile?: boolean;
  /** Dynamic config for the bench's own dev server, over the defaults (`--dynamic-config KEY=JSON`). */
  dynamicConfig?: Record<string, unknown>;
}

export const BENCH_USAGE = `usage: npm run bench [-- [--quick] [--only a,b] [--out DIR] [--profile] [--dynamic-config K=V] [--render FILE]]

  --quick       the small variant of every scenario (about six minutes)
  --only LIST   run only these scenarios: ${SCENARIOS.join(', ')}
  --out DIR     write latest.json, latest.md and latest.svg there (default bench/results)
  --profile     write V8 CPU profiles of the worker process during the overhead scenario
                to DIR/profile/ (open them in Chrome DevTools) and summarize them in the report
  --dynamic-config KEY=JSON
                a dynamic config value for the bench's own dev server, over its defaults
                (repeatable; e.g. history.transferProcessorMaxPollRPS=20 for the server default)
  --render FILE re-render latest.md and latest.svg from a results JSON (into --out), run nothing

Starts its own Temporal dev server on a free port (or uses TEMPORAL_ADDRESS), needs a Docker engine
and the sandbox image (npm run docker:ensure && npm run sandbox:build).`;

export function parseBenchArgs(argv: readonly string[], defaultOutDir: string): BenchArgs | { error: string } {
  const args: BenchArgs = { profile: 'full', scenarios: [...SCENARIOS], outDir: defaultOutDir, help: false };
  for (const { arg, flag, value } of cliFlags(argv)) {
    switch (flag) {
      case '--quick':
        args.profile = 'quick';
        break;
      case '--smoke':
        args.profile = 'smoke';
        break;
      case '--only': {
        const list = value();
        if (!list) return { error: '--only needs a comma-separated list of scenarios' };
        const names = list
          .split(',')
          .map((name) => name.trim())
          .filter(Boolean);
        const unknown = names.filter((name) => !(SCENARIOS as readonly string[]).includes(name));
        if (unknown.length || names.length === 0)
          return { error: `unknown scenario ${unknown.join(', ') || '(none)'}: choose from ${SCENARIOS.join(', ')}` };
        args.scenarios = SCENARIOS.filter((name) => names.includes(name));
        break;
      }
      case '--out': {
        const dir = value();
        if (!dir) return { error: '--out needs a directory' };
        args.outDir = dir;
        break;
      }
      case '--render': {
        const file = value();
        if (!file) return { error: '--render needs a results JSON file' };
        args.render = file;
        break;
      }
      case '--profile':
        args.cpuProfile = true;
        break;
      case '--dynamic-config': {
        const pair = value();
        const eq = pair?.indexOf('=') ?? -1;
        if (!pair || eq <= 0) return { error: '--dynamic-config needs KEY=VALUE (VALUE as JSON, e.g. 20 or true)' };
        let parsed: unknown;
        try {
          parsed = JSON.parse(pair.slice(eq + 1));
        } catch {
          return { error: `--dynamic-config ${pair}: the value must be JSON (e.g. 20, true, "text")` };
        }
        args.dynamicConfig = { ...args.dynamicConfig, [pair.slice(0, eq)]: parsed };
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
  return args;
}
