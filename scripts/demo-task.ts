/**
 * `npm run demo -- --task`: an overnight coding task on `examples/textkit`, end to end. The example
 * becomes a git repository with a bare "remote" in a temporary folder; night 1 runs with a budget
 * of two features (the initializer writes the feature list, two features are implemented, verified
 * by the harness, committed and pushed); night 2 resumes from the branch and finishes the third.
 * Prints progress, both morning reports and the remote branch's log.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { workflowUrl, type TemporalSettings } from '../client/connection';
import { codingTaskResult } from '../client/task-result';
import { CODING_TASK_WORKFLOW_TYPE, type CodingTaskInput } from '../common/coding-task';
import { addUsage, promptTokens, totalTokens, ZERO_USAGE, type TokenUsage } from '../common/model-types';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import { followTask } from '../cli/task';
import { PROJECT_ROOT } from '../platform/paths';

export interface TaskDemoContext {
  client: Client;
  temporal: TemporalSettings;
  brainQueue: string;
  handsQueue: string;
  /** An empty directory inside the hands worker's allowed roots, for the repository and its remote. */
  dir: string;
  say: (line: string) => void;
}

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, LANG: 'C' } }).trim();

/** Runs the two nights; returns the process exit code. */
export async function runTaskDemo(ctx: TaskDemoContext): Promise<number> {
  const dir = ctx.dir;
  const work = path.join(dir, 'textkit');
  fs.cpSync(path.join(PROJECT_ROOT, 'examples', 'textkit'), work, { recursive: true });
  git(work, 'init', '-q', '-b', 'main');
  git(work, 'add', '-A');
  git(work, '-c', 'user.name=demo', '-c', 'user.email=demo@example.invalid', 'commit', '-q', '-m', 'textkit: upper');
  const remote = path.join(dir, 'textkit.git');
  git(dir, 'clone', '-q', '--bare', work, remote);
  const branch = 'agent/textkit';
  ctx.say(`the remote: file://${remote} (from examples/textkit); the branch: ${branch}`);

  const suffix = randomUUID().slice(0, 6);
  const input: CodingTaskInput = {
    repo: { kind: 'git', url: `file://${remote}` },
    branch,
    specPath: 'SPEC.md',
    verify: 'npm test',
    handsTaskQueue: ctx.handsQueue,
  };
  let code = 0;
  let usage: TokenUsage = { ...ZERO_USAGE };
  let cost = 0;
  for (const [night, budget] of [
    [1, { featuresPerRun: 2 }],
    [2, {}],
  ] as const) {
    const taskId = `demo-task-${suffix}-night-${night}`;
    const handle = await ctx.client.workflow.start(CODING_TASK_WORKFLOW_TYPE, {
      taskQueue: ctx.brainQueue,
      workflowId: taskId,
      args: [{ ...input, budget }],
      staticSummary: `demo: textkit, night ${night}`,
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.status, value: 'running' },
        { key: SEARCH_ATTRIBUTES.kind, value: 'coding-task' },
        { key: SEARCH_ATTRIBUTES.repo, value: `file://${remote}` },
      ],
    });
    ctx.say(
      `night ${night}: task ${taskId} accepted · Web UI: ${workflowUrl(ctx.temporal, taskId, handle.firstExecutionRunId)}`,
    );
    await followTask(handle, { detachOnSigint: false, print: ctx.say });
    const result = await codingTaskResult(handle);
    console.log(`\n${result.report}`);
    if (result.state !== 'completed') code = 1;
    usage = addUsage(usage, result.usage);
    cost += result.costUsd;
  }
  const prompt = promptTokens(usage);
  ctx.say(
    `both nights: ${totalTokens(usage).toLocaleString('en-US')} tokens · $${cost.toFixed(4)} · cache hit ${prompt > 0 ? ((100 * usage.cacheRead) / prompt).toFixed(1) : '0.0'} % of prompt tokens`,
  );
  ctx.say(`the remote branch ${branch}:\n${git(remote, 'log', '--oneline', branch)}`);
  fs.rmSync(dir, { recursive: true, force: true });
  return code;
}
