/**
 * Installs the Temporal runtime once per process with a logger at `AGENT_LOG_LEVEL` (default WARN),
 * so worker state changes do not drown the CLI's own output.
 */
import { DefaultLogger, LogLevel, Runtime } from '@temporalio/worker';
import { workerLogLevel } from './settings';

let installed = false;

export function installRuntime(level: LogLevel = workerLogLevel()): void {
  if (installed) return;
  installed = true;
  try {
    Runtime.install({ logger: new DefaultLogger(level) });
  } catch {
    // A runtime was already installed by the embedding process; keep it.
  }
}
