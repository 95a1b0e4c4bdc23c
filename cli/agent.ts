/**
 * The `agent` command: parses the command line with the command table (`args.ts`, `commands.ts`),
 * prints help generated from it, and runs the command's handler, whose modules are loaded only then
 * — so help and usage errors load neither Temporal nor Docker. A usage mistake is one line naming
 * the flag or argument, with exit code 2; any other error one line with exit code 1 (`runMain`).
 */
import { runMain } from '../client/main';
import { helpText, parseCommandLine, UsageError, type ParsedCommandLine } from './args';

export async function main(argv: string[]): Promise<number> {
  let parsed: ParsedCommandLine;
  let help: string | undefined;
  try {
    parsed = parseCommandLine(argv);
    if (parsed.command.kind === 'help') help = helpText(parsed.command.topic);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`error: ${err.message}`);
    return 2;
  }
  if (help !== undefined || !parsed.run) {
    console.log(help);
    return 0;
  }
  return parsed.run();
}

if (require.main === module) runMain(main);
