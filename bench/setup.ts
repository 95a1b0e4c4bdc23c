/**
 * Gets the real parts for a bench run: the Temporal CLI and a dev server of the bench's own on a free
 * port with a temporary SQLite file (or the server at `TEMPORAL_ADDRESS`), a Docker engine, the
 * sandbox image, and the workflow bundle built once for every worker (in-process and child). Its own
 * files (database, server log, bundle) are removed when the run ends.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  ensureSearchAttributes,
  freePort,
  isTemporalServing,
  startDevServer,
  type DevServer,
} from '../platform/dev-server';
import { ensureDockerEngine } from '../platform/docker-engine';
import { DATA_DIR } from '../platform/paths';
import { buildSandboxImage } from '../platform/sandbox-image';
import { ensureTemporalCli, type ResolvedCli } from '../platform/temporal-cli';
import type { BenchPlatform } from './context';
import { workflowInterceptorModules, workflowPreloadModules } from '../workers/workflow-bundle';

export const BENCH_DATA_DIR = path.join(DATA_DIR, 'bench');

export interface PreparedPlatform extends BenchPlatform {
  cli: ResolvedCli;
  /** How Temporal was provided, for the report. */
  temporalDescription: string;
  /** The dynamic config the bench's own server runs with (its defaults included); empty for an external server. */
  dynamicConfig: Record<string, unknown>;
  /** Stops the bench's own server and removes its files. */
  dispose(): Promise<void>;
}

export async function preparePlatform(options: {
  dynamicConfig: Record<string, unknown>;
  log: (line: string) => void;
}): Promise<PreparedPlatform> {
  const { log } = options;
  fs.mkdirSync(BENCH_DATA_DIR, { recursive: true });
  const cli = await ensureTemporalCli(log);
  const docker = await ensureDockerEngine(log);
  const image = await buildSandboxImage(docker, log);
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';

  let server: DevServer | undefined;
  let address = process.env.TEMPORAL_ADDRESS;
  let temporalDescription: string;
  let dynamicConfig = options.dynamicConfig;
  const dbFile = path.join(BENCH_DATA_DIR, `temporal-${process.pid}.sqlite`);
  const logFile = path.join(BENCH_DATA_DIR, `temporal-${process.pid}.log`);
  if (address) {
    if (!(await isTemporalServing(address, namespace)))
      throw new Error(`TEMPORAL_ADDRESS=${address} does not answer as a Temporal server`);
    await ensureSearchAttributes(address, namespace);
    temporalDescription = `external server at ${address}`;
    dynamicConfig = {};
  } else {
    server = await startDevServer({
      cli,
      port: await freePort(),
      namespace,
      dbFile,
      logFile,
      dynamicConfig,
    });
    address = server.address;
    dynamicConfig = { ...DEV_SERVER_DYNAMIC_CONFIG, ...dynamicConfig };
    temporalDescription = 'dev server started by the bench (temporary SQLite file, WAL)';
    log(`Temporal dev server on ${address}`);
  }

  log('bundling the workflows');
  const bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    workflowInterceptorModules: workflowInterceptorModules(),
    preloadModules: workflowPreloadModules(),
    logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} },
  });
  const workflowBundlePath = path.join(BENCH_DATA_DIR, `workflow-bundle-${process.pid}.js`);
  fs.writeFileSync(workflowBundlePath, bundle.code);

  return {
    address,
    namespace,
    workflowBundlePath,
    docker,
    image: image.tag,
    cli,
    temporalDescription,
    dynamicConfig,
    async dispose() {
      await server?.stop();
      for (const file of [workflowBundlePath, dbFile, `${dbFile}-wal`, `${dbFile}-shm`, logFile])
        fs.rmSync(file, { force: true });
    },
  };
}
