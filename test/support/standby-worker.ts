/**
 * A worker process that stands by: it builds the same workers as `agent worker dev`
 * (`startWorkers('dev')`, configured from the environment, crash test mode included) at once, says
 * `{ type: 'ready' }` over IPC, and starts polling only when it receives `{ type: 'go' }`. The crash
 * matrix keeps the next worker standing by, so a crashed worker is replaced without waiting for a
 * process to start (a standby that polled early would take work from the worker under test).
 * SIGTERM before `go` exits at once; after it, the workers shut down gracefully.
 */
import { startWorkers } from '../../workers/run';

const leave = (): void => process.exit(0);

async function main(): Promise<void> {
  process.once('SIGTERM', leave);
  const go = new Promise<void>((resolve) =>
    process.on('message', (message: { type?: string }) => message?.type === 'go' && resolve()),
  );
  const workers = await startWorkers('dev');
  process.send?.({ type: 'ready' });
  await go;
  process.off('SIGTERM', leave);
  process.channel?.unref();
  await workers.run();
  await workers.close();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
