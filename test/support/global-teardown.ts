import * as fs from 'node:fs';
import { dockerClient } from '../../platform/docker-engine';
import { removeThrowawayCaches } from './throwaway-caches';

export default async function globalTeardown(): Promise<void> {
  await globalThis.__AGENT_TEST_SERVER__?.stop();
  globalThis.__AGENT_TEST_SERVER__ = undefined;
  if (process.env.TEST_WORKFLOW_BUNDLE) fs.rmSync(process.env.TEST_WORKFLOW_BUNDLE, { force: true });
  // Tidying only: a Docker engine that stopped answering is not the tests' failure.
  await removeThrowawayCaches(dockerClient()).catch(() => 0);
}
