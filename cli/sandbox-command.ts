/**
 * `agent sandbox <args>` from an argument list (parsed by the command table), for callers that hold
 * words rather than a parsed command — the tests of the sandbox commands. Apart from `sandbox.ts` so
 * that module, which the table loads, does not load the table.
 */
import { helpText, parseCommandLine, UsageError, type ParsedCommandLine } from './args';
import type { SandboxCommand } from './command-types';
import { runSandboxCommand, type SandboxCommandDeps } from './sandbox';

/** Runs `agent sandbox <args>` (parsed by the command table); returns the exit code. */
export async function sandboxCommand(args: string[], deps: SandboxCommandDeps = {}): Promise<number> {
  const out = deps.out ?? ((line: string) => console.log(line));
  const err = deps.err ?? ((line: string) => console.error(line));
  let parsed: ParsedCommandLine;
  try {
    parsed = parseCommandLine(['sandbox', ...args]);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    err(e.message);
    return 2;
  }
  const { command } = parsed;
  if (command.kind === 'help') {
    out(helpText(command.topic));
    return 0;
  }
  if (!command.kind.startsWith('sandbox-')) {
    err(`not a sandbox command: ${args.join(' ')}`);
    return 2;
  }
  return runSandboxCommand(command as SandboxCommand, deps);
}
