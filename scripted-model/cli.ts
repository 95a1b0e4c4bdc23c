/**
 * `npm run scripted-model -- --port N --script <file> [--host H] [--api-key K] [--min-cacheable-tokens N] [--context-window-tokens N]`
 *
 * Runs the scripted Messages API server until SIGINT/SIGTERM. The script is a JSON array of turns,
 * or a `.ts`/`.js` module whose default export (or `script` export) is a script, functions allowed.
 * On exit it prints the requests served and any script errors, and exits 1 if the run went
 * off-script.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runMain } from '../client/main';
import { ModelScript, parseScriptJson } from './script';
import { startScriptedModelServer } from './server';

export interface ScriptedModelArgs {
  port: number;
  host: string;
  scriptPath: string;
  apiKey?: string;
  minCacheableTokens?: number;
  contextWindowTokens?: number;
}

const USAGE =
  'usage: scripted-model --port N --script <file> [--host H] [--api-key K] [--min-cacheable-tokens N] [--context-window-tokens N]';

/** Parses the command line (pure). */
export function parseScriptedModelArgs(argv: readonly string[]): ScriptedModelArgs {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const [name, inline] = flag.split(/=(.*)/s, 2) as [string, string | undefined];
    if (
      !['--port', '--script', '--host', '--api-key', '--min-cacheable-tokens', '--context-window-tokens'].includes(name)
    )
      throw new Error(`unknown argument "${flag}"\n${USAGE}`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`${name} needs a value\n${USAGE}`);
    values.set(name, value);
  }
  const integer = (name: string): number | undefined => {
    const raw = values.get(name);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number, got "${raw}"`);
    return value;
  };
  const scriptPath = values.get('--script');
  if (!scriptPath) throw new Error(`--script is required\n${USAGE}`);
  const port = integer('--port');
  if (port === undefined) throw new Error(`--port is required\n${USAGE}`);
  return {
    port,
    host: values.get('--host') ?? '127.0.0.1',
    scriptPath,
    apiKey: values.get('--api-key'),
    minCacheableTokens: integer('--min-cacheable-tokens'),
    contextWindowTokens: integer('--context-window-tokens'),
  };
}

export async function loadScript(scriptPath: string): Promise<ModelScript> {
  const absolute = path.resolve(scriptPath);
  if (absolute.endsWith('.json')) return parseScriptJson(JSON.parse(fs.readFileSync(absolute, 'utf8')));
  // A module may hold functions (`respond`, `expect`, a script function); tsx compiles it on import.
  const loaded = (await import(absolute)) as { default?: unknown; script?: unknown };
  const script = loaded.default ?? loaded.script;
  if (typeof script === 'function') return script as ModelScript;
  if (Array.isArray(script)) return script as ModelScript;
  throw new Error(`${scriptPath} exports no script: export an array of turns or a function as default or as "script"`);
}

if (require.main === module) {
  runMain(async (argv) => {
    const args = parseScriptedModelArgs(argv);
    const server = await startScriptedModelServer({
      script: await loadScript(args.scriptPath),
      port: args.port,
      host: args.host,
      apiKey: args.apiKey,
      minCacheableTokens: args.minCacheableTokens,
      contextWindowTokens: args.contextWindowTokens,
    });
    console.log(`scripted model listening on ${server.url} (script ${args.scriptPath})`);
    console.log(`use it with: ANTHROPIC_BASE_URL=${server.url} ANTHROPIC_API_KEY=${args.apiKey ?? 'any-key'}`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await server.stop();
    console.log(`served ${server.requests.length} requests, ${server.turnsServed} scripted turns`);
    for (const error of server.scriptErrors)
      console.error(`script error at request ${error.requestIndex}: ${error.message}`);
    return server.scriptErrors.length > 0 ? 1 : 0;
  });
}
