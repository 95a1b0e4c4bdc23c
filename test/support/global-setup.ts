/**
 * Starts the real parts once for the whole run: a Temporal dev server (or the one at
 * `TEMPORAL_ADDRESS`), a check that Docker answers and the sandbox image exists, one workflow
 * bundle, and the worker processes' compiled entries (`compiled-entries.ts`). Fails with a clear message instead of hanging when a part is missing.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import {
  DevServer,
  ensureSearchAttributes,
  freePort,
  isTemporalServing,
  startDevServer,
} from '../../platform/dev-server';
import { requireDocker } from '../../platform/docker-engine';
import { DATA_DIR } from '../../platform/paths';
import { imageExists, sandboxImageTag } from '../../platform/sandbox-image';
import { ensureSandboxTools } from '../../platform/sandbox-tools';
import { ensureTemporalCli } from '../../platform/temporal-cli';
import { compileEntries } from './compiled-entries';
import { workflowInterceptorModules, workflowPreloadModules } from '../../workers/workflow-bundle';

declare global {
  var __AGENT_TEST_SERVER__: DevServer | undefined;
}

export default async function globalSetup(): Promise<void> {
  const workDir = path.join(DATA_DIR, 'test');
  fs.mkdirSync(workDir, { recursive: true });

  const docker = await requireDocker();
  const image = sandboxImageTag();
  if (!(await imageExists(docker, image))) {
    throw new Error(`the sandbox image ${image} does not exist: build it with \`npm run sandbox:build\``);
  }
  // Built with the image by `npm test`'s preparation; here only when the source changed since.
  const sandboxTools = ensureSandboxTools((line) => console.log(`[setup] ${line}`)).path;

  // Bundling is CPU and the server's start mostly waiting: the two overlap.
  const bundled = bundleWorkflowCode({
    workflowsPath: require.resolve('./workflows'),
    workflowInterceptorModules: workflowInterceptorModules(),
    preloadModules: workflowPreloadModules(),
    logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} },
  });
  // A failed start below must not leave the bundle's rejection unheard.
  bundled.catch(() => undefined);
  const cli = await ensureTemporalCli((line) => console.log(`[setup] ${line}`));
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  let address = process.env.TEMPORAL_ADDRESS;
  if (address) {
    if (!(await isTemporalServing(address, namespace)))
      throw new Error(`TEMPORAL_ADDRESS=${address} does not answer as a Temporal server`);
    await ensureSearchAttributes(address, namespace);
  } else {
    const server = await startDevServer({
      cli,
      port: await freePort(),
      namespace,
      logFile: path.join(workDir, `temporal-${process.pid}.log`),
    });
    globalThis.__AGENT_TEST_SERVER__ = server;
    address = server.address;
  }

  const bundle = await bundled;
  const compiled = await compileEntries(path.join(workDir, 'compiled'));
  process.env.TEST_COMPILED_AGENT = compiled.agent;
  process.env.TEST_COMPILED_STANDBY_WORKER = compiled.standbyWorker;
  const bundlePath = path.join(workDir, `workflow-bundle-${process.pid}.js`);
  fs.writeFileSync(bundlePath, bundle.code);

  process.env.TEST_TEMPORAL_ADDRESS = address;
  process.env.TEST_TEMPORAL_NAMESPACE = namespace;
  process.env.TEST_WORKFLOW_BUNDLE = bundlePath;
  process.env.TEST_SANDBOX_IMAGE = image;
  process.env.TEST_SANDBOX_TOOLS = sandboxTools;
  process.env.TEST_TEMPORAL_CLI = cli.path;
}
