/**
 * Bad input through `temporal workflow start` (the real temporal CLI against the test server): each
 * case fails the operation at once with one error that names the field, before any tool runs and
 * without a sandbox — nothing is half done. Input the schema refuses fails before any model call; a
 * repository only the hands host can refuse (`OperationFailed`) is checked once the first model
 * call has answered, so that request has gone out (at most that one; nothing acts on its reply). A
 * start the server itself refuses (a payload over its limit, input that is not JSON) starts nothing.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { EXAMPLES_DIR } from '../../activities/hands/deps';
import { OPERATION_WORKFLOW_TYPE } from '../../common/operation';
import { sandboxResourcesOf, temporalCli } from '../support/bad-input';
import { startOperationHarness, type OperationHarness } from '../support/operation-harness';

interface StartCase {
  name: string;
  /** The workflow input; objects get the harness's hands queue added. */
  input: unknown;
  /** The failure's type and a message fragment that names the field. */
  type: 'InvalidOperationInput' | 'OperationFailed';
  message: string | RegExp;
}

const CALCULATOR = path.join(EXAMPLES_DIR, 'calculator');

const CASES: StartCase[] = [
  { name: 'missing goal', input: {}, type: 'InvalidOperationInput', message: 'goal: required (a string)' },
  {
    name: 'empty goal',
    input: { goal: '' },
    type: 'InvalidOperationInput',
    message: 'goal: must be a non-empty string',
  },
  {
    name: 'blank goal',
    input: { goal: '  \n ' },
    type: 'InvalidOperationInput',
    message: 'goal: must be a non-empty string',
  },
  {
    name: 'goal of the wrong type',
    input: { goal: 42 },
    type: 'InvalidOperationInput',
    message: 'goal: expected a string, got a number',
  },
  {
    name: 'goal over the input limit (300 KB)',
    input: { goal: 'g'.repeat(300 * 1024) },
    type: 'InvalidOperationInput',
    message: 'goal: must be at most 262144 bytes (got 307200)',
  },
  {
    name: 'budget.maxTurns of the wrong type',
    input: { goal: 'x', budget: { maxTurns: 'many' } },
    type: 'InvalidOperationInput',
    message: 'budget.maxTurns: expected a number, got a string',
  },
  {
    name: 'budget.maxTurns zero',
    input: { goal: 'x', budget: { maxTurns: 0 } },
    type: 'InvalidOperationInput',
    message: /^invalid operation input: budget\.maxTurns: /,
  },
  {
    name: 'an unknown field',
    input: { goal: 'x', colour: 'red' },
    type: 'InvalidOperationInput',
    message: 'colour: unknown field (not allowed)',
  },
  {
    name: 'an unknown field in budget',
    input: { goal: 'x', budget: { maxDollars: 5 } },
    type: 'InvalidOperationInput',
    message: 'budget.maxDollars: unknown field (not allowed)',
  },
  {
    name: 'input that is not an object',
    input: 'fix the test',
    type: 'InvalidOperationInput',
    message: '(input): expected an object, got a string',
  },
  {
    name: 'an unknown repo kind',
    input: { goal: 'x', repo: { kind: 'svn', path: CALCULATOR } },
    type: 'InvalidOperationInput',
    message: 'repo.kind: must be "local" or "git"',
  },
  {
    name: 'a repo without kind',
    input: { goal: 'x', repo: { path: CALCULATOR } },
    type: 'InvalidOperationInput',
    message: 'repo.kind: must be "local" or "git"',
  },
  {
    name: 'a relative repo path',
    input: { goal: 'x', repo: { kind: 'local', path: 'examples/calculator' } },
    type: 'InvalidOperationInput',
    message: 'repo.path: must be an absolute path',
  },
  {
    name: 'a repo path that does not exist',
    input: { goal: 'x', repo: { kind: 'local', path: `${CALCULATOR}-typo` } },
    type: 'OperationFailed',
    message: `InvalidSeedSource: seed source ${CALCULATOR}-typo does not exist (allowed roots: `,
  },
  {
    name: 'a forbidden repo path (/etc)',
    input: { goal: 'list files', repo: { kind: 'local', path: '/etc' } },
    type: 'OperationFailed',
    message: /^InvalidSeedSource: seed source \/etc is outside the allowed roots \(allowed roots: .*examples\)/,
  },
  {
    name: 'a repo path that is a file',
    input: { goal: 'x', repo: { kind: 'local', path: path.join(CALCULATOR, 'package.json') } },
    type: 'OperationFailed',
    message: 'package.json is not a directory (allowed roots: ',
  },
  {
    name: 'a git URL that is an option',
    input: { goal: 'x', repo: { kind: 'git', url: '--upload-pack=touch /tmp/pwned' } },
    type: 'InvalidOperationInput',
    message: 'repo.url: must not start with "-"',
  },
  {
    name: 'a git remote helper URL',
    input: { goal: 'x', repo: { kind: 'git', url: 'ext::sh -c touch% /tmp/pwned' } },
    type: 'OperationFailed',
    message: 'uses a form the hands do not clone',
  },
  {
    name: 'a session id Docker cannot name',
    input: { goal: 'x', sessionId: '../escape' },
    type: 'InvalidOperationInput',
    message: "sessionId: must be 1-63 letters, digits, '.', '_' or '-'",
  },
  {
    name: 'a heartbeat timeout below one second',
    input: { goal: 'x', heartbeatTimeoutMs: 10 },
    type: 'InvalidOperationInput',
    message: /^invalid operation input: heartbeatTimeoutMs: /,
  },
  {
    name: 'maxTokensPerTurn that is not an integer',
    input: { goal: 'x', maxTokensPerTurn: 1.5 },
    type: 'InvalidOperationInput',
    message: 'maxTokensPerTurn: expected an integer, got a non-integer number (1.5)',
  },
];

describe('bad input through `temporal workflow start`', () => {
  let h: OperationHarness;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-bad-start-'));

  beforeAll(async () => {
    h = await startOperationHarness([]);
  });
  afterAll(async () => {
    await h?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const start = async (workflowId: string, input: unknown) => {
    const file = path.join(dir, `${workflowId}.json`);
    fs.writeFileSync(file, JSON.stringify(input));
    return temporalCli([
      'workflow',
      'start',
      '--type',
      OPERATION_WORKFLOW_TYPE,
      '--task-queue',
      h.brainQueue,
      '--workflow-id',
      workflowId,
      '--input-file',
      file,
    ]);
  };

  it.each(CASES.map((c, i) => [c.name, c, i] as const))('%s', async (_name, c, i) => {
    const workflowId = `bad-start-${i}-${process.pid}`;
    const input =
      c.input !== null && typeof c.input === 'object' ? { handsTaskQueue: h.handsQueue, ...c.input } : c.input;
    const requestsBefore = h.model.requests.length;
    const started = await start(workflowId, input);
    expect(started.code).toBe(0);

    const failure = await h.temporal.client.workflow
      .getHandle(workflowId)
      .result()
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect((cause as ApplicationFailure).type).toBe(c.type);
    if (typeof c.message === 'string') expect(cause!.message).toContain(c.message);
    else expect(cause!.message).toMatch(c.message);
    // Nothing was made; nothing was paid for but, for a repository the hands host refused, the
    // first request, which does not wait for its check.
    const requests = h.model.requests.length - requestsBefore;
    if (c.type === 'OperationFailed') expect(requests).toBeLessThanOrEqual(1);
    else expect(requests).toBe(0);
    expect(await sandboxResourcesOf(workflowId)).toEqual([]);
  });

  it('a goal over the server payload limit (3 MB) starts nothing', async () => {
    const workflowId = `bad-start-huge-${process.pid}`;
    const started = await start(workflowId, { goal: 'g'.repeat(3 * 1024 * 1024), handsTaskQueue: h.handsQueue });
    expect(started.code).not.toBe(0);
    expect(started.stderr).toMatch(/size|limit|exceed/i);
    await expect(h.temporal.client.workflow.getHandle(workflowId).describe()).rejects.toBeInstanceOf(
      WorkflowNotFoundError,
    );
  });

  it('input that is not JSON starts nothing', async () => {
    const workflowId = `bad-start-json-${process.pid}`;
    const started = await temporalCli([
      'workflow',
      'start',
      '--type',
      OPERATION_WORKFLOW_TYPE,
      '--task-queue',
      h.brainQueue,
      '--workflow-id',
      workflowId,
      '--input',
      '{goal: fix it',
    ]);
    expect(started.code).not.toBe(0);
    expect(started.stderr).toMatch(/json|invalid/i);
    await expect(h.temporal.client.workflow.getHandle(workflowId).describe()).rejects.toBeInstanceOf(
      WorkflowNotFoundError,
    );
  });
});
