/**
 * `npm run soak -- --minutes N [--seed S] [--concurrency K] [--out DIR]` — the chaos soak (not a
 * test: docs/benchmark.md#the-chaos-soak). Gets the real parts
 * (the `temporal` CLI, Docker, the sandbox image and tools, the cluster's server), starts the
 * cluster of `npm run cluster` when it is not running (and stops it again), bundles the workflows
 * once for every brain process, runs the soak and writes `soak-latest.json` and `soak-latest.md`.
 * Exits 1 when the verdict fails.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { runMain } from '../../client/main';
import { ensureDockerEngine } from '../../platform/docker-engine';
import { DATA_DIR, PROJECT_ROOT } from '../../platform/paths';
import { buildSandboxImage } from '../../platform/sandbox-image';
import { ensureSandboxTools } from '../../platform/sandbox-tools';
import { ensureTemporalCli } from '../../platform/temporal-cli';
import {
  clusterLayout,
  clusterStatus,
  devServerVersion,
  ensureServerBinaries,
  startCluster,
  stopCluster,
} from '../../platform/temporal-cluster';
import { workflowInterceptorModules, workflowPreloadModules } from '../../workers/workflow-bundle';
import { parseSoakArgs, SOAK_USAGE } from './args';
import { renderSoakMarkdown } from './report';
import { describeFaults, planSoak } from './schedule';
import { runSoak } from './soak';

const DEFAULT_OUT_DIR = path.join(PROJECT_ROOT, 'bench', 'results');

runMain(async (argv) => {
  const args = parseSoakArgs(argv, DEFAULT_OUT_DIR);
  if ('error' in args) {
    console.error(`error: ${args.error}\n\n${SOAK_USAGE}`);
    return 2;
  }
  if (args.help) {
    console.log(SOAK_USAGE);
    return 0;
  }
  const started = Date.now();
  const log = (line: string): void =>
    console.log(`[soak ${((Date.now() - started) / 1000).toFixed(1).padStart(7)} s] ${line}`);
  const seed = args.seed ?? Math.random().toString(36).slice(2, 10);
  const plan = planSoak({ seed, durationMs: args.minutes * 60_000, concurrency: args.concurrency });
  log(
    `seed ${seed}: ${plan.faults.length} faults planned (npm run soak -- --minutes ${args.minutes} --seed ${seed} repeats them)`,
  );
  for (const line of describeFaults(plan)) log(`  ${line}`);

  await ensureTemporalCli(log);
  const docker = await ensureDockerEngine(log);
  const image = (await buildSandboxImage(docker, log)).tag;
  ensureSandboxTools(log);
  const layout = clusterLayout(await devServerVersion(log));
  const binaries = await ensureServerBinaries(layout.version, log);
  const startedCluster = !(await clusterStatus(layout)).serving;
  if (startedCluster) log('starting the Temporal cluster (npm run cluster -- start)');
  await startCluster(log);
  const dataDir = path.join(DATA_DIR, 'soak', `${new Date().toISOString().replace(/[:.]/g, '-')}-${seed}`);
  fs.mkdirSync(dataDir, { recursive: true });
  log('bundling the workflows once for every brain process');
  const bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    workflowInterceptorModules: workflowInterceptorModules(),
    preloadModules: workflowPreloadModules(),
    logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} },
  });
  const workflowBundlePath = path.join(dataDir, 'workflow-bundle.js');
  fs.writeFileSync(workflowBundlePath, bundle.code);
  log(
    `ready after ${((Date.now() - started) / 1000).toFixed(0)} s; run files in ${path.relative(process.cwd(), dataDir)}`,
  );

  try {
    const results = await runSoak({
      minutes: args.minutes,
      seed,
      concurrency: args.concurrency,
      cluster: { layout, binaries },
      workflowBundlePath,
      image,
      agentArgs: ['--import', 'tsx', path.join(PROJECT_ROOT, 'cli', 'agent.ts')],
      dataDir,
      log,
    });
    fs.mkdirSync(args.outDir, { recursive: true });
    fs.writeFileSync(path.join(args.outDir, 'soak-latest.json'), `${JSON.stringify(results, null, 2)}\n`);
    fs.writeFileSync(path.join(args.outDir, 'soak-latest.md'), renderSoakMarkdown(results));
    console.log('');
    for (const [check, ok] of Object.entries(results.verdict)) console.log(`${ok ? 'pass' : 'FAIL'}  ${check}`);
    console.log(
      `\nwrote ${path.relative(process.cwd(), args.outDir) || '.'}/soak-latest.{json,md} — ${((Date.now() - started) / 1000).toFixed(0)} s in all`,
    );
    return results.verdict.passed ? 0 : 1;
  } finally {
    fs.rmSync(workflowBundlePath, { force: true });
    if (startedCluster) await stopCluster(log).catch((err: Error) => log(`stopping the cluster: ${err.message}`));
  }
});
