import {
  replayPolicyOf,
  toolDefinitions,
  toolMainArgument,
  toolSummary,
  validateModelToolCall,
  validateToolCall,
} from '../../common/tools';
import { formatTable } from '../../cli/sandbox';
import { parseDuration } from '../../common/duration';
import { countLines, shapeOutput, spillOptions } from '../../activities/hands/output';

describe('tool catalogue', () => {
  it('defines strict tools whose schemas forbid extra fields', () => {
    const tools = toolDefinitions();
    expect(tools.map((t) => t.name)).toEqual([
      'bash',
      'read_file',
      'write_file',
      'edit_file',
      'list_files',
      'grep',
      'task',
    ]);
    for (const tool of tools) {
      expect(tool.strict).toBe(true);
      expect(tool.input_schema.additionalProperties).toBe(false);
      expect(tool.input_schema.type).toBe('object');
      expect(tool.description!.length).toBeGreaterThan(40);
      expect(JSON.stringify(tool.input_schema)).not.toMatch(/"\$schema"|"minimum"|"maximum"|"minLength"/);
    }
    const edit = tools.find((t) => t.name === 'edit_file')!;
    expect(edit.input_schema.required).toEqual(['path', 'old_text', 'new_text']);
    const task = tools.find((t) => t.name === 'task')!;
    expect(task.input_schema.required).toEqual(['description', 'prompt']);
  });

  it('validates a task call like any other and keeps it away from the hands', () => {
    expect(validateModelToolCall('task', { description: 'find it', prompt: 'find the loader' })).toEqual({
      ok: true,
      kind: 'task',
      name: 'task',
      input: { description: 'find it', prompt: 'find the loader' },
    });
    const extra = validateModelToolCall('task', { description: 'd', prompt: 'p', model: 'big' });
    expect(!extra.ok && extra.error).toContain('unknown field "model"');
    expect(validateModelToolCall('bash', { command: 'ls' })).toMatchObject({ ok: true, kind: 'sandbox' });
    // The hands' own check knows only the sandbox tools.
    expect(validateToolCall('task', { description: 'd', prompt: 'p' }).ok).toBe(false);
    expect(toolSummary('task', { description: 'find the loader', prompt: 'long text' })).toBe('task: find the loader');
    expect(toolMainArgument('bash', { command: 'git push' })).toBe('git push');
    expect(toolMainArgument('edit_file', { path: 'a.ts', old_text: 'x', new_text: 'y' })).toBe('a.ts');
  });

  it('rejects an invented field and names it', () => {
    const check = validateToolCall('edit_file', { path: 'a.ts', old_text: 'x', new_text: 'y', oldText2: 'z' });
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.error).toContain('"oldText2"');
    expect(check.error).toMatch(/not allowed/);
    expect(check.error).toContain('path, old_text, new_text');
  });

  it('names missing fields, wrong types and unknown tools', () => {
    const missing = validateToolCall('write_file', { path: 'a' });
    expect(!missing.ok && missing.error).toContain('required field "content" is missing');
    const wrong = validateToolCall('read_file', { path: 'a', offset: '3' });
    expect(!wrong.ok && wrong.error).toContain('field "offset" must be a number, got a string');
    const unknown = validateToolCall('rm_rf', {});
    expect(!unknown.ok && unknown.error).toMatch(/Unknown tool "rm_rf".*bash, read_file/);
    const notObject = validateToolCall('bash', 'ls');
    expect(!notObject.ok && notObject.error).toContain('must be a JSON object');
    const ok = validateToolCall('bash', { command: 'ls', timeout_ms: 5000 });
    expect(ok).toEqual({ ok: true, input: { command: 'ls', timeout_ms: 5000 } });
  });

  it('declares replay policies, defaulting to never', () => {
    expect(replayPolicyOf('bash')).toBe('never');
    expect(replayPolicyOf('read_file')).toBe('safe');
    expect(replayPolicyOf('grep')).toBe('safe');
    expect(replayPolicyOf('list_files')).toBe('safe');
    expect(replayPolicyOf('write_file')).toBe('idempotent');
    expect(replayPolicyOf('edit_file')).toBe('idempotent');
    expect(replayPolicyOf('something_new')).toBe('never');
  });

  it('summarises calls for the UI in at most 100 characters', () => {
    expect(toolSummary('bash', { command: 'npm test' })).toBe('bash: npm test');
    expect(toolSummary('edit_file', { path: 'src/x.ts', old_text: 'a', new_text: 'b' })).toBe('edit_file: src/x.ts');
    expect(toolSummary('grep', { pattern: 'TODO', glob: '*.ts' })).toBe('grep: TODO *.ts');
    const long = toolSummary('bash', { command: `echo ${'x'.repeat(300)}` });
    expect(long.length).toBe(100);
    expect(toolSummary('bash', { nope: 1 })).toBe('bash');
  });
});

describe('output shaping', () => {
  const opts = spillOptions(1000, 40);

  it('keeps small output whole', () => {
    const out = Buffer.from('a\nb\n');
    expect(shapeOutput(out, '/p', opts)).toEqual({ text: 'a\nb\n' });
    expect(countLines(Buffer.from('a\nb'))).toBe(2);
    expect(countLines(Buffer.alloc(0))).toBe(0);
  });

  it('keeps head and tail of long output and says what is shown', () => {
    const out = Buffer.from(Array.from({ length: 100 }, (_, i) => `line ${i + 1}`).join('\n') + '\n');
    const shaped = shapeOutput(out, '/workspace/.agent/out/x.txt', opts);
    expect(shaped.spill).toEqual({ path: '/workspace/.agent/out/x.txt', bytes: out.length, lines: 100 });
    expect(shaped.text.startsWith('line 1\n')).toBe(true);
    expect(shaped.text.endsWith('line 100\n')).toBe(true);
    expect(shaped.text).toContain('Shown: lines 1-10');
    expect(shaped.text).toContain('and lines 91-100');
    expect(shaped.text).toContain('offset=11');
    expect(shaped.text).not.toContain('line 50\n');
  });

  it('cuts a single huge line by bytes', () => {
    const shaped = shapeOutput(Buffer.from('x'.repeat(5000)), '/p', opts);
    expect(shaped.text).toContain('the start of line 1');
    expect(shaped.text.length).toBeLessThan(1500);
  });
});

describe('agent sandbox output', () => {
  it('parses durations and prints a table', () => {
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('2d')).toBe(172_800_000);
    expect(parseDuration('250')).toBe(250);
    const now = Date.parse('2026-01-01T12:00:00Z');
    const table = formatTable(
      [
        {
          sessionId: 's1',
          operationId: 'op-1',
          container: {
            name: 'agent-sbx-s1',
            id: 'x',
            state: 'running',
            status: 'Up 1 hour',
            createdAt: new Date(now - 3_600_000),
          },
          volume: { name: 'agent-ws-s1' },
        },
      ],
      now,
    );
    expect(table.split('\n')[0]).toMatch(/^SANDBOX\s+CONTAINER\s+STATE\s+AGE\s+VOLUME\s+OPERATION$/);
    expect(table.split('\n')[1]).toMatch(/^s1\s+agent-sbx-s1\s+Up 1 hour\s+60m\s+agent-ws-s1\s+op-1$/);
  });
});
