/**
 * `--hooks` on `agent run`, `agent task start` and `agent schedule create`: inline JSON or a JSON
 * file, checked like the input's `hooks` field (a problem names the flag and the field), and carried
 * into the prompt or the coding task (a schedule starts its tasks with that input). No server.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseAgentArgs, UsageError } from '../../cli/args';
import { taskInput } from '../../cli/task';

const HOOKS = { Stop: [{ hooks: [{ type: 'command', command: 'npm test >&2 || exit 2' }] }] };

describe('the --hooks flag', () => {
  it('takes inline JSON on agent run', () => {
    expect(parseAgentArgs(['run', 'fix it', '--hooks', JSON.stringify(HOOKS)])).toMatchObject({
      kind: 'run',
      hooks: HOOKS,
    });
  });

  it('takes a JSON file on agent task start and agent schedule create, and the task input carries it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hooks-flag-'));
    try {
      const file = path.join(dir, 'hooks.json');
      fs.writeFileSync(file, JSON.stringify(HOOKS));
      const start = parseAgentArgs(['task', 'start', '--repo', dir, '--spec', 'x', '--hooks', file]);
      expect(start).toMatchObject({ kind: 'task-start', task: { hooks: HOOKS } });
      const schedule = parseAgentArgs([
        'schedule',
        'create',
        'nightly',
        '--cron',
        '0 2 * * *',
        '--',
        '--repo',
        dir,
        '--hooks',
        file,
      ]);
      expect(schedule).toMatchObject({ kind: 'schedule-create', task: { hooks: HOOKS } });
      if (start.kind !== 'task-start') throw new Error('not a task start');
      expect(taskInput(start.task, 'hands').hooks).toEqual(HOOKS);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['{"Stop": [{"hooks": []}]}', '--hooks: Stop.0.hooks: must list at least one hook'],
    ['{"Stop": ', '--hooks: not valid JSON'],
    ['/nonexistent/hooks.json', '--hooks: cannot read /nonexistent/hooks.json as JSON'],
  ])('refuses %s naming the flag and the field', (value, message) => {
    let thrown: unknown;
    try {
      parseAgentArgs(['run', 'x', '--hooks', value]);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(UsageError);
    expect((thrown as Error).message).toContain(message);
  });
});
