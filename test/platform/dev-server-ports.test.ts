/**
 * A dev server that loses the race for a port it picked itself (its HTTP API's or its metrics', chosen
 * at random and bound a moment later) is started again; one whose requested port is taken is not.
 * The log lines are the server's own, from a CI run in which another program took the HTTP API's port.
 */
import { lostOwnPort } from '../../platform/dev-server';

const line = (port: number) =>
  `time=2026-12-04T07:50:30.481 level=ERROR msg="error returned" component=fx error="failed listening for HTTP API on 127.0.0.1:${port}: listen tcp 127.0.0.1:${port}: bind: address already in use"`;

describe('a dev server that lost a port race', () => {
  it('is retried when the port in use is one the server chose', () => {
    expect(lostOwnPort(`starting\n${line(45651)}\n`, [7233, undefined])).toBe(true);
  });

  it('is not retried when the port in use is the frontend or the Web UI the caller asked for', () => {
    expect(lostOwnPort(line(7233), [7233, undefined])).toBe(false);
    expect(lostOwnPort(line(8233), [7233, 8233])).toBe(false);
    expect(lostOwnPort(`${line(45651)}\n${line(7233)}`, [7233, 8233])).toBe(false);
  });

  it('is not retried for any other failure', () => {
    expect(lostOwnPort('level=ERROR msg="sqlite: database is locked"', [7233, undefined])).toBe(false);
  });
});
