/**
 * Entry-point wrapper for command scripts: runs `main`, prints an error as one clear line (the stack
 * only with AGENT_DEBUG=1), and sets the exit code.
 */
import { commandLineDebug } from '../platform/settings';

export function runMain(main: (args: string[]) => Promise<number | void>): void {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code ?? 0),
    (err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      console.error(`error: ${message}`);
      if (commandLineDebug() && err instanceof Error) console.error(err.stack);
      process.exit(1);
    },
  );
}
