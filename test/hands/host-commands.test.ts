/**
 * The hands worker's programs on its own host (the workspace quota's losetup, mkfs.ext4, debugfs) run
 * through a helper process — the sandbox tools' executor as the worker's child — so that starting one
 * does not fork the large worker process. Real processes: the built sandbox tools binary.
 */
import { HostCommandHelper, spawnDirectly } from '../../activities/hands/host-commands';
import { testPlatform } from '../support/env';

describe('host commands through the helper process', () => {
  const helpers: HostCommandHelper[] = [];
  const helper = (toolsPath: string) => {
    const made = new HostCommandHelper(toolsPath);
    helpers.push(made);
    return made;
  };
  afterAll(() => helpers.forEach((made) => made.close()));

  it("runs each program as the helper's child, with its output and exit status", async () => {
    const { run } = helper(testPlatform().sandboxTools);
    const result = await run('sh', ['-c', 'echo "parent $PPID"; echo oops >&2; exit 3']);
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toBe('oops\n');
    const parent = Number(/^parent (\d+)$/.exec(result.stdout.trim())?.[1]);
    expect(parent).toBeGreaterThan(1);
    expect(parent).not.toBe(process.pid);
    // Many at once, one helper: every program has the same parent.
    const many = await Promise.all(Array.from({ length: 8 }, (_, i) => run('sh', ['-c', `echo $PPID ${i}`])));
    expect(many.map((r) => r.stdout.trim())).toEqual(Array.from({ length: 8 }, (_, i) => `${parent} ${i}`));
    expect(many.every((r) => r.exitCode === 0)).toBe(true);
  });

  it('runs programs the plain way when the helper cannot start, and fails a program that does not exist', async () => {
    const { run } = helper('/nonexistent/agent-sandbox-tools');
    const result = await run('sh', ['-c', 'echo $PPID']);
    expect(result).toEqual({ stdout: `${process.pid}\n`, stderr: '', exitCode: 0 });
    await expect(run('/nonexistent/program', [])).rejects.toThrow(/ENOENT/);
    const through = helper(testPlatform().sandboxTools);
    await expect(through.run('/nonexistent/program', [])).rejects.toThrow(/ENOENT/);
    await expect(spawnDirectly('sh', ['-c', 'exit 4'])).resolves.toMatchObject({ exitCode: 4 });
  });
});
