/**
 * `npm run server [-- start|stop|status]`: the persistent local Temporal dev server with the Web UI.
 */
import { localServerSettings, startLocalServer, stopLocalServer } from '../platform/local-server';
import { isTemporalServing } from '../platform/dev-server';
import { runMain } from '../client/main';

runMain(async (args) => {
  const command = args[0] ?? 'start';
  const settings = localServerSettings();
  switch (command) {
    case 'start': {
      const status = await startLocalServer(settings, (line) => console.log(line));
      console.log(
        `${status.reused ? 'reusing the Temporal server already running' : 'started the Temporal dev server'} on ${status.address}` +
          ` (namespace ${status.namespace}${status.pid ? `, pid ${status.pid}` : ''})`,
      );
      console.log(`Web UI: ${status.uiUrl}`);
      console.log(`data: ${status.dbFile}  log: ${status.logFile}`);
      return 0;
    }
    case 'stop':
      console.log(
        (await stopLocalServer(settings))
          ? 'stopped the Temporal dev server'
          : 'no Temporal dev server started by this checkout is running',
      );
      return 0;
    case 'status': {
      const address = `${settings.ip}:${settings.port}`;
      const up = await isTemporalServing(address, settings.namespace);
      console.log(up ? `Temporal is serving on ${address}` : `no Temporal server answers on ${address}`);
      return up ? 0 : 1;
    }
    default:
      throw new Error(`unknown command "${command}": use start, stop or status`);
  }
});
