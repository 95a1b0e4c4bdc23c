/**
 * Egress from a sandbox whose image has neither python3 nor node: the forwarder is the sandbox
 * tools' own (mounted from the host), so an allowed host answers through the proxy, a forbidden one
 * is refused, and before the proxy serves the sandbox the forwarder itself answers with a 502 that
 * says why. Real Docker, real proxy process; the requests are written with bash's /dev/tcp.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { EgressHost } from '../../activities/egress/egress-host';
import { createHandsActivities } from '../../activities/hands/activities';
import { secretStore } from '../../activities/secrets/store';
import { egressPolicySchema } from '../../common/egress';
import { dockerClient } from '../../platform/docker-engine';
import { imageWithoutPythonAndNode, type BareImage } from '../support/bare-image';
import { hostAddress, startStandIn, type StandInServer } from '../support/egress';
import { testPlatform } from '../support/env';
import { handsFixture, type HandsFixture } from '../support/hands';

/**
 * Bash that waits for the forwarder to listen, then GETs `url` through it and prints the status line
 * and the body (as it came: chunked or not, without carriage returns).
 */
function fetchWithBash(url: string): string {
  const host = new URL(url).host;
  return [
    'for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/3128) 2>/dev/null && break; sleep 0.1; done',
    'exec 3<>/dev/tcp/127.0.0.1/3128',
    `printf 'GET %s HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n' '${url}' '${host}' >&3`,
    'IFS= read -r status <&3; echo "${status%$\'\\r\'}"',
    "while IFS= read -r line <&3 && [ \"${line%$'\\r'}\" != '' ]; do :; done",
    "tr -d '\\r' <&3",
    'exec 3<&-',
  ].join('\n');
}

describe('egress in a sandbox image without python3 and node (real Docker, real proxy process)', () => {
  const ip = hostAddress();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'egress-bare-test-'));
  let image: BareImage;
  let egress: EgressHost;
  let fx: HandsFixture;
  let allowed: StandInServer;
  let forbidden: StandInServer;

  beforeAll(async () => {
    allowed = await startStandIn('allowed-host', ip);
    forbidden = await startStandIn('forbidden-host', ip);
    image = await imageWithoutPythonAndNode(dockerClient(), testPlatform().sandboxImage);
    egress = new EgressHost({
      secrets: secretStore(new Map()),
      env: { ...process.env, AGENT_EGRESS_DIR: root },
      warn: () => undefined,
      registries: { hosts: [], env: [] },
    });
    fx = handsFixture({ egress, image: image.tag });
  });

  afterAll(async () => {
    await fx?.cleanup();
    fx?.sandboxes.commands.close();
    egress?.shutdown();
    await image?.remove();
    await Promise.all([allowed?.close(), forbidden?.close()]);
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('reaches an allowed host through the forwarder and the proxy; the forwarder says when no proxy serves', async () => {
    const sessionId = fx.sessionId('egress-bare');
    await fx.sandboxes.lifecycle.ensure(sessionId);
    const none = await fx.sandboxes.commands.script(
      sessionId,
      `command -v python3 node; ${fetchWithBash(`http://${ip}:${allowed.port}/early`)}`,
    );
    expect(none.stdout.toString('utf8')).toBe(
      'HTTP/1.1 502 Bad Gateway\nthe egress proxy of this sandbox is not running right now (the hands worker restarts it); retry the command\n',
    );
    expect(allowed.seen).toEqual([]);

    const hands = createHandsActivities({ sandboxes: fx.sandboxes, egress, secrets: egress.secrets });
    const result = await hands.runTool({
      sessionId,
      toolCallId: `toolu_${randomUUID().slice(0, 12)}`,
      name: 'bash',
      input: {
        command: [
          fetchWithBash(`http://${ip}:${allowed.port}/ok`),
          'echo ---',
          fetchWithBash(`http://${ip}:${forbidden.port}/secret`),
        ].join('\n'),
      },
      egress: egressPolicySchema.parse({ allow: [`${ip}:${allowed.port}`] }),
    });
    expect(result.executorFallback).toBeUndefined();
    const [reached, refused] = result.content.split('\n---\n');
    expect(reached).toMatch(/^HTTP\/1\.1 200 OK\n(.*\n)?allowed-host\n/);
    expect(refused).toMatch(/^HTTP\/1\.1 403 /);
    expect(refused).toContain(
      `egress to ${ip}:${forbidden.port} is not allowed by this task's policy (allow-list): allowed are ${ip}:${allowed.port}`,
    );
    expect(allowed.seen).toEqual(['GET /ok']);
    expect(forbidden.seen).toEqual([]);
    expect(result.egress).toMatchObject({ allowed: 1, denied: 1 });
  });
});
