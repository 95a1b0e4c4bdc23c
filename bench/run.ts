/**
 * `npm run bench` — the benchmark suite (not a test): starts its own Temporal dev server on a free
 * port (or uses `TEMPORAL_ADDRESS`), needs Docker and the sandbox image, runs the scenarios against
 * the scripted Messages API server and writes `latest.json`, `latest.md` and `latest.svg` to
 * `bench/results/` (or `--out`). Exits 1 when a scenario failed (the others are still reported).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runMain } from '../client/main';
import { installRuntime } from '../workers/runtime';
import { BENCH_USAGE, parseBenchArgs } from './args';
import { connectBench } from './context';
import { PROFILES } from './profiles';
import { renderMarkdown, renderSvg } from './report';
import { validateResults, type BenchResults } from './results';
import { preparePlatform } from './setup';
import { runSuite } from './suite';

const DEFAULT_OUT_DIR = path.join(__dirname, 'results');

runMain(async (argv) => {
  const args = parseBenchArgs(argv, DEFAULT_OUT_DIR);
  if ('error' in args) {
    console.error(`error: ${args.error}\n\n${BENCH_USAGE}`);
    return 2;
  }
  if (args.help) {
    console.log(BENCH_USAGE);
    return 0;
  }
  if (args.render) {
    const results = JSON.parse(fs.readFileSync(args.render, 'utf8')) as BenchResults;
    const problems = validateResults(results);
    if (problems.length) throw new Error(`${args.render} is not a bench results file:\n  ${problems.join('\n  ')}`);
    writeReport(results, args.outDir);
    console.log(`rendered ${path.relative(process.cwd(), args.outDir) || '.'}/latest.{md,svg} from ${args.render}`);
    return 0;
  }
  const started = Date.now();
  const log = (line: string): void =>
    console.log(`[bench ${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}`);
  // The SDK's own warnings (e.g. "no workflows registered" for the hands worker) would drown the progress lines.
  installRuntime(process.env.AGENT_LOG_LEVEL ? undefined : 'ERROR');
  const profile = PROFILES[args.profile];
  log(`${args.profile} run: ${args.scenarios.join(', ')}`);

  const platform = await preparePlatform({
    dynamicConfig: {
      ...(profile.suggestContinueAsNewEvents === null
        ? {}
        : { 'limit.historyCount.suggestContinueAsNew': profile.suggestContinueAsNewEvents }),
      ...args.dynamicConfig,
    },
    log,
  });
  const ctx = await connectBench(platform, log);
  try {
    const { results, failures } = await runSuite(ctx, {
      profile: args.profile,
      scenarios: args.scenarios,
      temporalDescription: platform.temporalDescription,
      dynamicConfig: platform.dynamicConfig,
      temporalCli: platform.cli.path,
      outDir: args.outDir,
      cpuProfile: args.cpuProfile,
    });
    // Checked as written: a NaN would become null in the JSON.
    const problems = validateResults(JSON.parse(JSON.stringify(results)));
    fs.mkdirSync(args.outDir, { recursive: true });
    fs.writeFileSync(path.join(args.outDir, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
    writeReport(results, args.outDir);

    console.log('');
    for (const target of results.targets)
      console.log(`${target.verdict.padEnd(8)} ${target.description}: ${target.measured} (target ${target.target})`);
    console.log(
      `\nwrote ${path.relative(process.cwd(), args.outDir) || '.'}/latest.{json,md,svg} — ${((Date.now() - started) / 1000).toFixed(0)} s in all`,
    );
    if (problems.length)
      console.error(`\nthe results do not match their schema (a bench bug):\n  ${problems.join('\n  ')}`);
    return failures.length || problems.length ? 1 : 0;
  } finally {
    await ctx.close();
    await platform.dispose();
  }
});

function writeReport(results: BenchResults, outDir: string): void {
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'latest.svg'), renderSvg(results));
  fs.writeFileSync(path.join(outDir, 'latest.md'), renderMarkdown(results, 'latest.svg'));
}
