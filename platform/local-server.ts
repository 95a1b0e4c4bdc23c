/**
 * The project's persistent local Temporal server: `npm run server` / `agent server`.
 *
 * One dev server per checkout, SQLite file and log under `.data/temporal/`, gRPC on `TEMPORAL_PORT`
 * (7233) and the Web UI on `TEMPORAL_UI_PORT` (8233). Starting it while it is already up reuses it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DATA_DIR } from './paths';
import { localServerAddress, type LocalServerAddress } from './settings';
import { ensureSearchAttributes, isAlive, isPortFree, isTemporalServing, startDevServer } from './dev-server';
import { ensureTemporalCli, PlatformError } from './temporal-cli';

/** The local server's address, ports and namespace, and the folder of its files. */
export interface LocalServerSettings extends LocalServerAddress {
  dir: string;
}

/** `TEMPORAL_IP`, `TEMPORAL_PORT`, `TEMPORAL_UI_PORT`, `TEMPORAL_NAMESPACE` (`platform/settings.ts`). */
export function localServerSettings(): LocalServerSettings {
  return { ...localServerAddress(), dir: path.join(DATA_DIR, 'temporal') };
}

export interface LocalServerStatus {
  address: string;
  uiUrl: string;
  namespace: string;
  reused: boolean;
  pid?: number;
  dbFile: string;
  logFile: string;
}

const files = (s: LocalServerSettings) => ({
  dbFile: path.join(s.dir, 'dev.sqlite'),
  logFile: path.join(s.dir, 'server.log'),
  pidFile: path.join(s.dir, 'server.pid'),
});

function readPid(pidFile: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Starts the persistent server in the background, or reuses the one already answering. */
export async function startLocalServer(
  settings: LocalServerSettings = localServerSettings(),
  log: (line: string) => void = () => undefined,
): Promise<LocalServerStatus> {
  const { dbFile, logFile, pidFile } = files(settings);
  const address = `${settings.ip}:${settings.port}`;
  const uiUrl = `http://${settings.ip === '0.0.0.0' ? 'localhost' : settings.ip}:${settings.uiPort}`;
  if (await isTemporalServing(address, settings.namespace)) {
    const added = await ensureSearchAttributes(address, settings.namespace);
    if (added.length) log(`registered search attributes: ${added.join(', ')}`);
    return { address, uiUrl, namespace: settings.namespace, reused: true, pid: readPid(pidFile), dbFile, logFile };
  }
  if (!(await isPortFree(settings.port, settings.ip))) {
    throw new PlatformError(
      `port ${settings.port} is busy but no Temporal server answers there: stop that program or set TEMPORAL_PORT to a free port`,
    );
  }
  const cli = await ensureTemporalCli(log);
  const server = await startDevServer({
    cli,
    ip: settings.ip,
    port: settings.port,
    uiPort: settings.uiPort,
    namespace: settings.namespace,
    dbFile,
    logFile,
    detached: true,
  });
  fs.writeFileSync(pidFile, `${server.pid}\n`);
  return { address, uiUrl, namespace: settings.namespace, reused: false, pid: server.pid, dbFile, logFile };
}

/** Stops the server this checkout started (by its pid file). Returns false when none was running. */
export async function stopLocalServer(settings: LocalServerSettings = localServerSettings()): Promise<boolean> {
  const { pidFile } = files(settings);
  const pid = readPid(pidFile);
  if (pid === undefined) return false;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 15_000;
  while (isAlive(pid)) {
    if (Date.now() > deadline) process.kill(pid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  fs.rmSync(pidFile, { force: true });
  return true;
}
