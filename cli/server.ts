/** `agent server [start|stop|status]`: the project's local Temporal dev server (`platform/local-server.ts`). */
export async function serverCommand(action: 'start' | 'stop' | 'status'): Promise<number> {
  const { localServerSettings, startLocalServer, stopLocalServer } = await import('../platform/local-server');
  const { isTemporalServing } = await import('../platform/dev-server');
  const settings = localServerSettings();
  if (action === 'start') {
    const st = await startLocalServer(settings, (line) => console.log(line));
    console.log(`${st.reused ? 'reusing' : 'started'} Temporal on ${st.address} · Web UI ${st.uiUrl}`);
    return 0;
  }
  if (action === 'stop') {
    console.log((await stopLocalServer(settings)) ? 'stopped' : 'no server started by this checkout is running');
    return 0;
  }
  const up = await isTemporalServing(`${settings.ip}:${settings.port}`, settings.namespace);
  console.log(up ? `Temporal serving on ${settings.ip}:${settings.port}` : 'no Temporal server answers');
  return up ? 0 : 1;
}
