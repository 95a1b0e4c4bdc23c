/**
 * `npm run cluster [-- start|stop|status|build]`: a Temporal cluster on this machine — the server
 * built from its Go module at the dev server's version, PostgreSQL for persistence and visibility,
 * four services in four processes (`platform/temporal-cluster.ts`). Point workers and `agent` at it
 * with `TEMPORAL_ADDRESS` (printed by `start` and `status`). `build` only builds the server.
 */
import { runMain } from '../client/main';
import {
  clusterStatus,
  devServerVersion,
  ensureServerBinaries,
  startCluster,
  stopCluster,
  type ClusterStatus,
} from '../platform/temporal-cluster';

function describe(status: ClusterStatus): string[] {
  const services = Object.entries(status.services)
    .map(([name, pid]) => `${name} ${pid ? `pid ${pid}` : 'not running'}`)
    .join(', ');
  return [
    `Temporal ${status.version} cluster on ${status.address}: ${status.serving ? 'serving' : 'not serving'}`,
    `services: ${services}; PostgreSQL ${status.postgres ? 'running' : 'not running'}`,
    `use it: export TEMPORAL_ADDRESS=${status.address}`,
  ];
}

runMain(async (args) => {
  const command = args[0] ?? 'start';
  const log = (line: string) => console.log(line);
  switch (command) {
    case 'start':
      for (const line of describe(await startCluster(log))) console.log(line);
      return 0;
    case 'stop':
      await stopCluster(log);
      console.log('the cluster is stopped (its data stays)');
      return 0;
    case 'status': {
      const status = await clusterStatus();
      for (const line of describe(status)) console.log(line);
      return status.serving ? 0 : 1;
    }
    case 'build': {
      const version = await devServerVersion(log);
      const binaries = await ensureServerBinaries(version, log);
      console.log(`Temporal server ${version}: ${binaries.server}`);
      return 0;
    }
    default:
      throw new Error(`unknown command "${command}": use start, stop, status or build`);
  }
});
