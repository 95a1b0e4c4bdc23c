/**
 * `npm run jaeger [-- build]`: Jaeger on this machine, to read the workers' traces — built from its
 * Go module when missing (`platform/jaeger.ts`), then run in the foreground with in-memory storage
 * until Ctrl-C: OTLP/HTTP on 127.0.0.1:4318 (the workers' `OTEL_EXPORTER_OTLP_ENDPOINT`), the UI and
 * query API on http://127.0.0.1:16686. `build` only builds it.
 */
import * as path from 'node:path';
import { runMain } from '../client/main';
import { DEFAULT_JAEGER_PORTS, ensureJaeger, JAEGER_VERSION, startJaeger } from '../platform/jaeger';
import { DATA_DIR } from '../platform/paths';

runMain(async (args) => {
  const command = args[0] ?? 'run';
  if (command !== 'run' && command !== 'build') throw new Error(`unknown command "${command}": use run or build`);
  const binary = await ensureJaeger(JAEGER_VERSION, (line) => console.log(line));
  if (command === 'build') {
    console.log(`Jaeger ${JAEGER_VERSION}: ${binary}`);
    return 0;
  }
  const jaeger = await startJaeger(binary, DEFAULT_JAEGER_PORTS, { dir: path.join(DATA_DIR, 'jaeger') });
  console.log(`Jaeger ${JAEGER_VERSION} (pid ${jaeger.pid}), traces kept in memory until it stops`);
  console.log(`workers: export OTEL_EXPORTER_OTLP_ENDPOINT=${jaeger.otlpEndpoint}`);
  console.log(`traces: ${jaeger.queryUrl} (Ctrl-C stops it)`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await jaeger.stop();
  return 0;
});
