/**
 * The demo: a real operation on `examples/calculator` (a repository with a failing test); with
 * `--task`, an overnight coding task on `examples/textkit` over two nights (`demo-task.ts`).
 *
 * Starts (or reuses) the persistent Temporal dev server, makes Docker and the sandbox image
 * available, starts a worker in this process on demo-only task queues, and runs the operation.
 * With `ANTHROPIC_API_KEY` set the real model works on it; without it the scripted Messages API
 * server plays an agent that reads the failing test, fixes the code and runs the tests.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultAllowedRoots } from '../activities/hands/deps';
import { randomUUID } from 'node:crypto';
import { operationResult } from '../client/operation-result';
import { followOperation, formatElapsed, formatTokens } from '../cli/follow';
import { totalTokens } from '../common/model-types';
import { OPERATION_WORKFLOW_TYPE, OperationInput } from '../common/operation';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import { ensureDockerEngine } from '../platform/docker-engine';
import { PROJECT_ROOT } from '../platform/paths';
import { buildSandboxImage } from '../platform/sandbox-image';
import { startLocalServer } from '../platform/local-server';
import { ensureTemporalCli } from '../platform/temporal-cli';
import { startScriptedModelServer } from '../scripted-model/server';
import { FIX_FAILING_TEST_SCENARIO } from '../scripted-model/scenarios/fix-failing-test';
import { codingTaskScenario } from '../scripted-model/scenarios/coding-task';
import { runTaskDemo } from './demo-task';
import { connectClient, temporalSettings, workflowUrl } from '../client/connection';
import { startWorkers } from '../workers/run';
import { workspaceDiff } from '../cli/workspace';
import { runMain } from '../client/main';

const say = (line: string): void => console.log(`[demo] ${line}`);

runMain(async (argv) => {
  const task = argv.includes('--task');
  const unknown = argv.find((arg) => arg !== '--task');
  if (unknown) throw new Error(`unknown argument ${unknown} (npm run demo [-- --task])`);
  const started = Date.now();
  await ensureTemporalCli(say);
  const docker = await ensureDockerEngine(say);
  const image = await buildSandboxImage(docker, say);
  say(
    image.built
      ? `built the sandbox image ${image.tag} in ${image.seconds.toFixed(0)} s`
      : `sandbox image ${image.tag} is ready`,
  );
  const server = process.env.TEMPORAL_ADDRESS ? undefined : await startLocalServer(undefined, say);
  if (server) {
    say(
      `${server.reused ? 'reusing' : 'started'} the Temporal dev server on ${server.address} (Web UI ${server.uiUrl})`,
    );
    // The workers and the client connect where it listens (TEMPORAL_PORT may have moved it off 7233).
    process.env.TEMPORAL_ADDRESS = server.address;
  }

  const scripted = process.env.ANTHROPIC_API_KEY
    ? undefined
    : await startScriptedModelServer({ script: task ? codingTaskScenario() : FIX_FAILING_TEST_SCENARIO });
  if (scripted) {
    process.env.ANTHROPIC_API_KEY = 'scripted-demo-key';
    process.env.ANTHROPIC_BASE_URL = scripted.url;
    say(`no ANTHROPIC_API_KEY: the scripted Messages API server at ${scripted.url} plays the agent`);
  } else {
    say(`using the real model (${process.env.AGENT_MODEL ?? 'default model'})`);
  }

  const suffix = randomUUID().slice(0, 8);
  process.env.AGENT_BRAIN_QUEUE = `demo-brain-${suffix}`;
  process.env.AGENT_HANDS_QUEUE = `demo-hands-${suffix}`;
  // The task's repository is made under a fresh temporary directory: this demo's own hands worker
  // (on demo-only queues) may read it, besides what it may read anyway.
  const taskDir = task ? fs.mkdtempSync(path.join(os.tmpdir(), 'agent-task-demo-')) : undefined;
  if (taskDir) process.env.AGENT_ALLOWED_ROOTS = [taskDir, ...defaultAllowedRoots(process.env)].join(':');
  const workers = await startWorkers('dev');
  const running = workers.run();
  const settings = temporalSettings(process.env);
  const { client, connection } = await connectClient(settings);
  try {
    if (task) {
      const code = await runTaskDemo({
        dir: taskDir!,
        client,
        temporal: settings,
        brainQueue: workers.queues.brain!,
        handsQueue: workers.queues.hands!,
        say,
      });
      say(`${formatElapsed(Date.now() - started)} wall`);
      if (scripted && scripted.scriptErrors.length)
        throw new Error(
          `the scripted agent went off-script: ${scripted.scriptErrors.map((e) => e.message).join('; ')}`,
        );
      return code;
    }
    const repo = path.join(PROJECT_ROOT, 'examples', 'calculator');
    const workflowId = `demo-${suffix}`;
    const input: OperationInput = {
      goal: 'The test suite of this repository fails. Find out why, fix the code (not the tests), and verify with `npm test`.',
      repo: { kind: 'local', path: repo },
      handsTaskQueue: workers.queues.hands,
      budget: { maxTurns: 30 },
    };
    const handle = await client.workflow.start(OPERATION_WORKFLOW_TYPE, {
      taskQueue: workers.queues.brain!,
      workflowId,
      args: [input],
      staticSummary: 'demo: fix the failing test in examples/calculator',
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.status, value: 'running' },
        { key: SEARCH_ATTRIBUTES.kind, value: 'run' },
        { key: SEARCH_ATTRIBUTES.repo, value: repo },
      ],
    });
    const url = workflowUrl(settings, workflowId, handle.firstExecutionRunId);
    say(`operation ${workflowId} accepted · Web UI: ${url}`);
    await followOperation(handle, { stop: new Promise(() => undefined) });
    const result = await operationResult(handle);
    const history = await handle.fetchHistory();
    const historyBytes = Buffer.byteLength(JSON.stringify(history));

    const diff = await workspaceDiff(result.sessionId);

    console.log(`\n=== ${result.state.toUpperCase()}: ${result.reason}`);
    if (result.finalText) console.log(`\n${result.finalText}`);
    console.log(`\n=== diff (${diff.stat.trim().split('\n').pop() ?? 'no changes'})\n${diff.diff || '(no changes)'}`);
    console.log(
      `=== ${result.turns} turns · ${result.steps} steps · ${formatTokens(totalTokens(result.usage))} tokens · $${result.costUsd.toFixed(4)}` +
        ` · cache hit ${(100 * result.tokens.cacheHitRate).toFixed(1)} %` +
        ` · ${history.events?.length ?? 0} history events (${(historyBytes / 1024).toFixed(1)} KiB) · ${formatElapsed(Date.now() - started)} wall`,
    );
    console.log(`=== Web UI: ${url}`);
    if (server) console.log('The Temporal dev server keeps running (npm run server -- stop stops it).');
    if (scripted && scripted.scriptErrors.length)
      throw new Error(`the scripted agent went off-script: ${scripted.scriptErrors.join('; ')}`);
    return result.state === 'completed' ? 0 : 1;
  } finally {
    workers.shutdown();
    await running;
    await workers.close();
    await connection.close();
    await scripted?.stop();
  }
});
