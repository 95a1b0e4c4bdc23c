/**
 * `npm run leak-check`: fails (exit 1) when the harness left a container, a volume, a loop device or
 * a workspace image on this host that nobody labelled `agent.keep` (see platform/sandbox-leaks.ts).
 *
 *   npm run leak-check -- --record <file>   write down what is there now (before the tests)
 *   npm run leak-check -- --since <file>    ignore what was there then (after the tests)
 *
 * `.ci/run` records before `npm test` and checks after the crash matrix, so only what the tests
 * made and left counts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runMain } from '../client/main';
import { requireDocker } from '../platform/docker-engine';
import { DATA_DIR } from '../platform/paths';
import {
  findSandboxLeaks,
  formatLeaks,
  leakCount,
  withoutBaseline,
  type SandboxLeaks,
} from '../platform/sandbox-leaks';

runMain(async (args) => {
  const [flag, file] = args;
  if (args.length && !(args.length === 2 && (flag === '--record' || flag === '--since'))) {
    console.error('usage: npm run leak-check [-- --record <file> | --since <file>]');
    return 2;
  }
  const docker = await requireDocker();
  const found = await findSandboxLeaks(docker, [
    process.env.AGENT_WORKSPACE_IMAGE_DIR ?? path.join(DATA_DIR, 'workspaces'),
  ]);
  if (flag === '--record') {
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(found, null, 1));
    console.log(`leak check: ${leakCount(found)} sandbox part(s) were already there before the tests`);
    return 0;
  }
  const leaks =
    flag === '--since' && fs.existsSync(file)
      ? withoutBaseline(found, JSON.parse(fs.readFileSync(file, 'utf8')) as SandboxLeaks)
      : found;
  for (const line of formatLeaks(leaks)) console.log(line);
  const count = leakCount(leaks);
  console.log(count === 0 ? 'leak check: nothing left behind' : `leak check: ${count} leftover(s)`);
  return count === 0 ? 0 : 1;
});
