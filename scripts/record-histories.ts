/**
 * `npm run fixtures:record`: records the histories of representative operations (and a coding task,
 * sessions, a rewind, and a pull request on a real Gitea) as replay fixtures
 * (`test/fixtures/histories/*.json`), which `test/replay/replay.test.ts` replays against the current
 * workflow code. Re-record only when a workflow change is *meant* to be incompatible and no
 * operation recorded with the old code can still be running; otherwise guard the change with
 * `patched()` (see docs/changing-workflow-code.md) and keep the old fixtures.
 *
 * Without arguments it records only the fixtures that are missing; `-- --only <name>[,<name>…]`
 * records just those (a new one, without touching the others); `-- --replace` re-records them all.
 */
import { AGENT_USER } from '../activities/hands/sandbox-spec';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { abortUpdate, compactUpdate, statusQuery, steerUpdate } from '../common/operation';
import { freePort, startDevServer } from '../platform/dev-server';
import { requireDocker } from '../platform/docker-engine';
import { PROJECT_ROOT } from '../platform/paths';
import { sandboxImageTag } from '../platform/sandbox-image';
import { ensureSandboxTools } from '../platform/sandbox-tools';
import { ensureTemporalCli } from '../platform/temporal-cli';
import { runMain } from '../client/main';
import { containerNameOf } from '../common/sandbox-names';
import type { ScriptedTurn } from '../scripted-model/script';
import { workflowInterceptorModules, workflowPreloadModules } from '../workers/workflow-bundle';

const FIXTURES = path.join(PROJECT_ROOT, 'test', 'fixtures', 'histories');

runMain(async (args) => {
  // Existing fixtures are kept (old histories must keep replaying): --replace re-records them all,
  // --only <name>[,<name>…] records just those (replacing them).
  const only = args[0] === '--only' && args[1] ? new Set(args[1].split(',')) : undefined;
  const replace = args.includes('--replace');
  if ((args.length && !only && !replace) || (only && args.length > 2))
    throw new Error('usage: npm run fixtures:record [-- --replace | --only <name>[,<name>…]]');
  const wanted = (name: string): boolean =>
    only ? only.has(name) : replace || !fs.existsSync(path.join(FIXTURES, `${name}.json`));
  await requireDocker();
  const cli = await ensureTemporalCli();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-record-'));
  const server = await startDevServer({ cli, port: await freePort(), logFile: path.join(dir, 'server.log') });
  const bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    workflowInterceptorModules: workflowInterceptorModules(),
    preloadModules: workflowPreloadModules(),
  });
  const bundlePath = path.join(dir, 'bundle.js');
  fs.writeFileSync(bundlePath, bundle.code);
  Object.assign(process.env, {
    TEST_TEMPORAL_ADDRESS: server.address,
    TEST_TEMPORAL_NAMESPACE: 'default',
    TEST_WORKFLOW_BUNDLE: bundlePath,
    TEST_SANDBOX_IMAGE: sandboxImageTag(),
    TEST_TEMPORAL_CLI: cli.path,
    TEST_SANDBOX_TOOLS: ensureSandboxTools((line) => console.log(line)).path,
  });
  // The harness lives with the tests; it only needs the variables above.
  const { startOperationHarness, waitFor } = await import('../test/support/operation-harness');
  const { operationResult } = await import('../client/operation-result');
  // The brain may start the test MCP server (`mcp-tools`) with this very node.
  const h = await startOperationHarness([], { brain: { mcp: { allowedCommands: new Set([process.execPath]) } } });
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
  const fixTheTest: ScriptedTurn[] = [
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
  ];
  try {
    let handle: WorkflowHandle;
    // Each a fixture of its own, recorded by the code of its time: the seed source check before the
    // first model call; then after its first reply, with checkpoints recorded by the tool calls; then
    // with the patches folded into one marker (`workflows/shared/patches.ts`); then with the step
    // inputs in their small shape (`ModelStepInput`, `RunToolInput`).
    for (const name of [
      'completed-with-tools',
      'completed-with-seed-check',
      'completed-seed-check-after-first-reply',
      'completed-patches-folded',
      'completed-compact-inputs',
    ]) {
      if (!wanted(name)) continue;
      h.model.setScript(fixTheTest);
      handle = await h.start(
        { goal: 'fix the failing test', repo: { kind: 'local', path: calculator } },
        `fixture-${name}`,
      );
      await operationResult(handle);
      await record(name, handle.workflowId);
    }

    for (const name of ['refused-seed-source', 'refused-seed-source-after-first-reply']) {
      if (!wanted(name)) continue;
      h.model.setScript([{ text: 'answered before the check' }]);
      handle = await h.start({ goal: 'list files', repo: { kind: 'local', path: '/etc' } }, `fixture-${name}`);
      await operationResult(handle).catch(() => undefined);
      await record(name, handle.workflowId);
    }

    if (wanted('steered')) {
      h.model.setScript([
        { toolCalls: [{ name: 'bash', input: { command: 'while [ ! -f /workspace/release ]; do sleep 0.05; done' } }] },
        { text: 'ok' },
      ]);
      handle = await h.start({ goal: 'steer me' }, 'fixture-steered');
      await waitFor(async () => (await handle.query(statusQuery)).phase === 'tools', 'tools');
      await handle.executeUpdate(steerUpdate, { args: [{ text: 'also mention the weather' }] });
      execFileSync('docker', [
        'exec',
        '-u',
        AGENT_USER,
        containerNameOf(handle.workflowId),
        'touch',
        '/workspace/release',
      ]);
      await operationResult(handle);
      await record('steered', handle.workflowId);
    }

    if (wanted('aborted')) {
      h.model.setScript([{ toolCalls: [{ name: 'bash', input: { command: 'sleep 600' } }] }]);
      handle = await h.start({ goal: 'abort me' }, 'fixture-aborted');
      await waitFor(async () => (await handle.query(statusQuery)).phase === 'tools', 'tools');
      await handle.executeUpdate(abortUpdate, { args: [{ reason: 'fixture' }] });
      await operationResult(handle);
      await record('aborted', handle.workflowId);
    }

    if (wanted('failed-budget')) {
      h.model.setScript([
        { toolCalls: [{ name: 'bash', input: { command: 'true' } }] },
        { toolCalls: [{ name: 'bash', input: { command: 'true' } }] },
      ]);
      handle = await h.start({ goal: 'run out of turns', budget: { maxTurns: 2 } }, 'fixture-budget');
      await operationResult(handle);
      await record('failed-budget', handle.workflowId);
    }

    if (wanted('deadline-timer')) {
      // Two steps inside the deadline (no timer of their own), a tool call the deadline passes
      // during, and the end it calls for, known from the run's deadline timer.
      h.model.setScript([
        { toolCalls: [{ name: 'bash', input: { command: 'true' } }] },
        { toolCalls: [{ name: 'bash', input: { command: 'sleep 3' } }] },
        { text: 'never sent' },
      ]);
      handle = await h.start({ goal: 'run out of time', budget: { maxDurationMs: 2_000 } }, 'fixture-deadline-timer');
      await operationResult(handle);
      await record('deadline-timer', handle.workflowId);
    }

    if (wanted('context-managed')) {
      // Clear batches, a compaction asked for by Update, a reply cut at max_tokens and continued, a paused turn resumed.
      const { isCompactionRequest } = await import('../test/support/context-scripts');
      let turn = 0;
      h.model.setScript((request) => {
        if (isCompactionRequest(request)) return { text: 'Summary: printed three outputs, waited once; next, answer.' };
        turn += 1;
        const print = `printf 'out ${turn} %03000d' 0`;
        if (turn <= 3) return { toolCalls: [{ name: 'bash', input: { command: print } }] };
        const wait = 'while [ ! -f /workspace/release ]; do sleep 0.05; done; echo released';
        if (turn === 4) return { toolCalls: [{ name: 'bash', input: { command: wait } }] };
        if (turn === 5) return { text: 'The answer starts here, ', stopReason: 'max_tokens' };
        if (turn === 6) return { text: 'goes on, ', stopReason: 'pause_turn' };
        return { text: 'and ends.' };
      });
      const handle = await h.start(
        {
          goal: 'print outputs, then answer',
          context: {
            windowTokens: 6_000,
            compactAtPct: 90,
            keepTurns: 1,
            editing: { atPct: 25, keepTurns: 1, minClearTokens: 700 },
          },
        },
        'fixture-context',
      );
      await waitFor(async () => {
        const status = await handle.query(statusQuery);
        return status.phase === 'tools' && status.turn === 4;
      }, 'the waiting tool call');
      await handle.executeUpdate(compactUpdate, { args: [{}] });
      execFileSync('docker', [
        'exec',
        '-u',
        AGENT_USER,
        containerNameOf(handle.workflowId),
        'touch',
        '/workspace/release',
      ]);
      await operationResult(handle);
      await record('context-managed', handle.workflowId);
    }

    if (wanted('parallel-safe-batch-and-counters')) {
      // A batch of safe calls run at once, then enough turns for the counters to be published once.
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
      handle = await h.start(
        // The same call ten times on purpose: not a loop to stop.
        { goal: 'look around', repo: { kind: 'local', path: calculator }, stuck: { sameCallRepeats: 100 } },
        'fixture-parallel-safe-batch',
      );
      await operationResult(handle);
      await record('parallel-safe-batch-and-counters', handle.workflowId);
    }

    if (wanted('stuck-then-recovered')) {
      // Stuck on a hands queue nobody polls, then a worker starts: stuck, then running, then completed.
      const lonely = `fixture-lonely-${process.pid}`;
      h.model.setScript([{ toolCalls: [{ name: 'bash', input: { command: 'echo late' } }] }, { text: 'ok' }]);
      handle = await h.start(
        { goal: 'wait for a worker', handsTaskQueue: lonely, stuck: { notStartedMs: 500 } },
        'fixture-stuck-then-recovered',
      );
      await waitFor(async () => (await handle.query(statusQuery)).stuck, 'stuck');
      const { createHandsWorker } = await import('../workers/workers');
      const late = await createHandsWorker({
        connection: h.temporal.nativeConnection,
        namespace: 'default',
        taskQueue: lonely,
        docker: h.docker,
        image: sandboxImageTag(),
      });
      const running = late.run();
      await operationResult(handle);
      late.shutdown();
      await running;
      await record('stuck-then-recovered', handle.workflowId);
    }

    if (wanted('stuck-retrying-clock-free')) {
      // A model step retrying past the attempts under the clock-free watchdog: probes answer how
      // long the step has waited, the run is stuck, then the retry succeeds.
      h.model.setScript([
        { fault: { type: 'server_error', status: 503 } },
        { fault: { type: 'server_error', status: 503 } },
        { text: 'third time lucky' },
      ]);
      handle = await h.start(
        { goal: 'ride out a flaky API', stuck: { notStartedMs: 300, recheckMs: 200, retryAttempts: 1 } },
        'fixture-stuck-retrying-clock-free',
      );
      await waitFor(async () => (await handle.query(statusQuery)).stuck, 'stuck');
      await operationResult(handle);
      await record('stuck-retrying-clock-free', handle.workflowId);
    }

    if (wanted('loop-stuck')) {
      h.model.setScript(() => ({ toolCalls: [{ name: 'bash', input: { command: 'echo same' } }] }));
      handle = await h.start({ goal: 'loop' }, 'fixture-loop-stuck');
      await operationResult(handle);
      await record('loop-stuck', handle.workflowId);
    }

    if (wanted('mcp-tools')) {
      // The tools of a stdio MCP server listed once, a call refused by its schema, then one that runs.
      h.model.setScript([
        { toolCalls: [{ name: 'mcp__notes__add_note', input: { text: 7 } }] },
        { toolCalls: [{ name: 'mcp__notes__add_note', input: { text: 'buy milk' } }] },
        { text: 'noted' },
      ]);
      handle = await h.start(
        {
          goal: 'note it',
          mcpServers: {
            notes: {
              command: process.execPath,
              args: ['--import', 'tsx', 'test/support/mcp-test-server.ts'],
              env: { NOTES_FILE: path.join(dir, 'notes.txt') },
            },
          },
        },
        'fixture-mcp-tools',
      );
      await operationResult(handle);
      await record('mcp-tools', handle.workflowId);
    }

    // The coding task of its time; then with the patches folded into one marker.
    for (const name of ['coding-task', 'coding-task-patches-folded']) {
      if (wanted(name)) await recordCodingTask(record, name);
    }

    const { recordSessionHistories, SESSION_FIXTURES } = await import('./record-session-histories');
    if (SESSION_FIXTURES.some(wanted)) await recordSessionHistories(h, record, wanted);
    const { recordRewindHistories } = await import('./record-rewind-histories');
    await recordRewindHistories(h, record, wanted);
    const { recordForgeHistories } = await import('./record-forge-histories');
    await recordForgeHistories(record, wanted);
  } finally {
    await h.close();
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

/** A coding task on `examples/textkit`: initializer and one feature, pushed to a local bare remote. */
async function recordCodingTask(
  record: (name: string, workflowId: string) => Promise<void>,
  name: string,
): Promise<void> {
  const { startTaskHarness, taskResult } = await import('../test/support/coding-task');
  const h = await startTaskHarness();
  try {
    const handle = await h.start(
      { branch: 'agent/fixture', specPath: 'SPEC.md', verify: 'npm test', budget: { featuresPerRun: 1 } },
      `fixture-${name}`,
    );
    await taskResult(handle);
    await record(name, handle.workflowId);
  } finally {
    await h.close();
  }
}
