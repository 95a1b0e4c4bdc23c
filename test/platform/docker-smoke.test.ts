import Docker from 'dockerode';
import { PassThrough } from 'node:stream';
import { testPlatform } from '../support/env';

describe('Docker engine and the sandbox image (real)', () => {
  it('runs git --version as the non-root user with no network, and removes the container', async () => {
    const docker = new Docker();
    const name = `agent-smoke-${process.pid}`;
    const container = await docker.createContainer({
      name,
      Image: testPlatform().sandboxImage,
      Cmd: ['bash', '-c', 'id -u; id -un; git --version; ls /sys/class/net | tr "\\n" " "'],
      HostConfig: { NetworkMode: 'none' },
      Labels: { 'agent.harness': '1', 'agent.smoke': '1' },
    });
    try {
      const stream = await container.attach({ stream: true, stdout: true, stderr: true });
      const stdout = new PassThrough();
      const chunks: Buffer[] = [];
      stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
      container.modem.demuxStream(stream, stdout, process.stderr);
      await container.start();
      const { StatusCode } = (await container.wait()) as { StatusCode: number };
      expect(StatusCode).toBe(0);
      const [uid, user, git, interfaces] = Buffer.concat(chunks).toString('utf8').trim().split('\n');
      expect(uid).toBe('1000');
      expect(user).toBe('agent');
      expect(git).toMatch(/^git version \d+\.\d+/);
      expect(interfaces.trim().split(' ')).toEqual(['lo']);
      const info = await container.inspect();
      expect(info.HostConfig.NetworkMode).toBe('none');
      expect(info.Mounts.some((m) => m.Source.includes('docker.sock'))).toBe(false);
    } finally {
      await container.remove({ force: true });
    }
    await expect(docker.getContainer(name).inspect()).rejects.toThrow(/no such container/i);
  });
});
