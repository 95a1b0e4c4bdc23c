/**
 * Installs the Temporal runtime once per process with a logger at `AGENT_LOG_LEVEL` (default WARN),
 * so worker state changes do not drown the CLI's own output.
 */
import { DefaultLogger, LogLevel, Runtime } from '@temporalio/worker';

let installed = false;

export function installRuntime(
  level: LogLevel = (process.env.AGENT_LOG_LEVEL?.toUpperCase() as LogLevel | undefined) ?? 'WARN',
): void {
  if (installed) return;
  installed = true;
  try {
    Runtime.install({ logger: new DefaultLogger(level) });
  } catch {
    // A runtime was already installed by the embedding process; keep it.
  }
}
