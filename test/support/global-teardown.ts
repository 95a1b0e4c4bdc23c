import * as fs from 'node:fs';

export default async function globalTeardown(): Promise<void> {
  await globalThis.__AGENT_TEST_SERVER__?.stop();
  globalThis.__AGENT_TEST_SERVER__ = undefined;
  if (process.env.TEST_WORKFLOW_BUNDLE) fs.rmSync(process.env.TEST_WORKFLOW_BUNDLE, { force: true });
}
