/**
 * `npm run fixtures:record [-- --replace]`: records the histories of representative operations as
 * replay fixtures (`test/fixtures/histories/*.json`), which `test/replay/replay.test.ts` replays
 * against the current workflow code. By default only the fixtures that do not exist yet are
 * recorded (a new representative operation added here), so the histories of older code stay.
 * `--replace` re-records them all: only when a workflow change is *meant* to be incompatible and no
 * operation recorded with the old code can still be running; otherwise guard the change with
 * `patched()` (see README, "Changing workflow code") and keep the old fixtures.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { abortUpdate, statusQuery, steerUpdate } from '../common/operation';
import { freePort, startDevServer } from '../platform/dev-server';
import { requireDocker } from '../platform/docker-engine';
import { PROJECT_ROOT } from '../platform/paths';
import { sandboxImageTag } from '../platform/sandbox-image';
import { ensureTemporalCli } from '../platform/temporal-cli';
import { runMain } from '../client/main';
import { containerNameOf } from '../common/sandbox-names';

const FIXTURES = path.join(PROJECT_ROOT, 'test', 'fixtures', 'histories');

runMain(async (args) => {
  const unknown = args.filter((arg) => arg !== '--replace');
  if (unknown.length) throw new Error(`unknown argument ${unknown[0]}: the only option is --replace`);
  const replace = args.includes('--replace');
  const wanted = (name: string): boolean => replace || !fs.existsSync(path.join(FIXTURES, `${name}.json`));
  await requireDocker();
  const cli = await ensureTemporalCli();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-record-'));
  const server = await startDevServer({ cli, port: await freePort(), logFile: path.join(dir, 'server.log') });
  const bundle = await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows') });
  const bundlePath = path.join(dir, 'bundle.js');
  fs.writeFileSync(bundlePath, bundle.code);
  Object.assign(process.env, {
    TEST_TEMPORAL_ADDRESS: server.address,
    TEST_TEMPORAL_NAMESPACE: 'default',
    TEST_WORKFLOW_BUNDLE: bundlePath,
    TEST_SANDBOX_IMAGE: sandboxImageTag(),
    TEST_TEMPORAL_CLI: cli.path,
  });
  // The harness lives with the tests; it only needs the variables above.
  const { startOperationHarness, waitFor } = await import('../test/support/operation-harness');
  const { operationResult } = await import('../client/operation-result');
  const h = await startOperationHarness();
  const calculator = path.join(PROJECT_ROOT, 'examples', 'calculator');
  // The temporal CLI writes histories in the proto JSON form that `historyFromJSON` reads.
  const record = async (name: string, workflowId: string): Promise<void> => {
    const json = execFileSync(
      cli.path,
      ['workflow', 'show', '--address', server.address, '--workflow-id', workflowId, '--output', 'json'],
      {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    const history = JSON.parse(json) as { events: unknown[] };
    fs.mkdirSync(FIXTURES, { recursive: true });
    fs.writeFileSync(path.join(FIXTURES, `${name}.json`), `${JSON.stringify(history, null, 1)}\n`);
    console.log(`recorded ${name} (${history.events.length} events)`);
  };
  /** The representative operations: each sets its script, runs, and returns its workflow id. */
  const fixtures: Array<{ name: string; run: () => Promise<string> }> = [
    {
      name: 'completed-with-tools',
      async run() {
        h.model.setScript([
          { toolCalls: [{ name: 'list_files', input: {} }] },
          {
            toolCalls: [
              { name: 'read_file', input: { path: 'src/math.js' } },
              {
                name: 'edit_file',
                input: { path: 'src/math.js', old_text: 'values.length - 1', new_text: 'values.length', extra: 1 },
              },
            ],
          },
          {
            toolCalls: [
              {
                name: 'edit_file',
                input: {
                  path: 'src/math.js',
                  old_text: 'sum(values) / (values.length - 1)',
                  new_text: 'sum(values) / values.length',
                },
              },
            ],
          },
          { toolCalls: [{ name: 'bash', input: { command: 'npm test 2>&1 | tail -n 3' } }] },
          { text: 'Fixed.' },
        ]);
        const handle = await h.start(
          { goal: 'fix the failing test', repo: { kind: 'local', path: calculator } },
          'fixture-completed',
        );
        await operationResult(handle);
        return handle.workflowId;
      },
    },
    {
      name: 'steered',
      async run() {
        h.model.setScript([
          {
            toolCalls: [{ name: 'bash', input: { command: 'while [ ! -f /workspace/release ]; do sleep 0.05; done' } }],
          },
          { text: 'ok' },
        ]);
        const handle = await h.start({ goal: 'steer me' }, 'fixture-steered');
        await waitFor(async () => (await handle.query(statusQuery)).phase === 'tools', 'tools');
        await handle.executeUpdate(steerUpdate, { args: [{ text: 'also mention the weather' }] });
        execFileSync('docker', ['exec', containerNameOf(handle.workflowId), 'touch', '/workspace/release']);
        await operationResult(handle);
        return handle.workflowId;
      },
    },
    {
      name: 'aborted',
      async run() {
        h.model.setScript([{ toolCalls: [{ name: 'bash', input: { command: 'sleep 600' } }] }]);
        const handle = await h.start({ goal: 'abort me' }, 'fixture-aborted');
        await waitFor(async () => (await handle.query(statusQuery)).phase === 'tools', 'tools');
        await handle.executeUpdate(abortUpdate, { args: [{ reason: 'fixture' }] });
        await operationResult(handle);
        return handle.workflowId;
      },
    },
    {
      name: 'failed-budget',
      async run() {
        h.model.setScript([
          { toolCalls: [{ name: 'bash', input: { command: 'true' } }] },
          { toolCalls: [{ name: 'bash', input: { command: 'true' } }] },
        ]);
        const handle = await h.start({ goal: 'run out of turns', budget: { maxTurns: 2 } }, 'fixture-budget');
        await operationResult(handle);
        return handle.workflowId;
      },
    },
    {
      // A batch of safe calls run at once, then enough turns for the counters to be published once.
      name: 'parallel-safe-batch-and-counters',
      async run() {
        h.model.setScript([
          {
            toolCalls: [
              { name: 'list_files', input: { path: 'src' } },
              { name: 'read_file', input: { path: 'src/math.js' } },
              { name: 'grep', input: { pattern: 'values', path: 'src' } },
            ],
          },
          ...Array.from({ length: 10 }, () => ({ toolCalls: [{ name: 'bash', input: { command: 'true' } }] })),
          { text: 'Looked around.' },
        ]);
        const handle = await h.start(
          { goal: 'look around', repo: { kind: 'local', path: calculator } },
          'fixture-parallel-safe-batch',
        );
        await operationResult(handle);
        return handle.workflowId;
      },
    },
  ];
  try {
    for (const fixture of fixtures) {
      if (wanted(fixture.name)) await record(fixture.name, await fixture.run());
      else console.log(`kept ${fixture.name} (recorded with older code; --replace re-records it)`);
    }
  } finally {
    await h.close();
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
