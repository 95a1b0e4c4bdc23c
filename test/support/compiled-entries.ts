/**
 * The worker processes tests start and kill (`agent worker …`, the crash matrix's standby worker),
 * compiled once per test run into one CommonJS file each instead of loaded through tsx at every
 * start: a start costs ~1.9 instead of ~3.1 s of CPU, and the crash matrices start about eighty.
 * Same code: our modules are bundled as they are (packages stay `require`s of node_modules), and each
 * module keeps its own folder as `__dirname` and its relative `require.resolve`s, so files read or
 * started next to the sources (run wrapper, executor, egress proxy) are the checkout's.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { build, type Plugin } from 'esbuild';
import { PROJECT_ROOT } from '../../platform/paths';

/** What `compileEntries` built: absolute paths of the compiled files. */
export interface CompiledEntries {
  agent: string;
  standbyWorker: string;
}

const ENTRIES: Record<keyof CompiledEntries, string> = {
  agent: path.join(PROJECT_ROOT, 'cli', 'agent.ts'),
  standbyWorker: path.join(PROJECT_ROOT, 'test', 'support', 'standby-worker.ts'),
};

/** Every module's `__dirname` and relative `require.resolve` as they are in the checkout. */
const keepModulePaths: Plugin = {
  name: 'keep-module-paths',
  setup(builder) {
    builder.onLoad({ filter: /\.ts$/ }, async (args) => {
      const dir = path.dirname(args.path);
      const source = (await fs.promises.readFile(args.path, 'utf8'))
        .replace(/\b__dirname\b/g, JSON.stringify(dir))
        .replace(
          /require\.resolve\((['"])(\.{1,2}\/[^'"]*)\1\)/g,
          (_, _quote: string, relative: string) => `require.resolve(${JSON.stringify(path.resolve(dir, relative))})`,
        );
      return { contents: source, loader: 'ts' };
    });
  },
};

/** Compiles the entries into `dir` (a few hundred ms). */
export async function compileEntries(dir: string): Promise<CompiledEntries> {
  fs.mkdirSync(dir, { recursive: true });
  const out = {} as CompiledEntries;
  for (const [name, entry] of Object.entries(ENTRIES) as Array<[keyof CompiledEntries, string]>) {
    out[name] = path.join(dir, `${name}-${process.pid}.cjs`);
    await build({
      entryPoints: [entry],
      outfile: out[name],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      packages: 'external',
      plugins: [keepModulePaths],
      logLevel: 'error',
    });
  }
  return out;
}

/**
 * The node arguments that run `cli/agent.ts` with `args`: the compiled file the global setup built
 * (`TEST_COMPILED_AGENT`), else the source through tsx.
 */
export function agentProcessArgs(...args: string[]): string[] {
  const compiled = process.env.TEST_COMPILED_AGENT;
  return compiled ? [compiled, ...args] : ['--import', 'tsx', ENTRIES.agent, ...args];
}

/** The node arguments that run the crash matrix's standby worker (compiled when the setup built it). */
export function standbyWorkerArgs(): string[] {
  const compiled = process.env.TEST_COMPILED_STANDBY_WORKER;
  return compiled ? [compiled] : ['--import', 'tsx', ENTRIES.standbyWorker];
}
