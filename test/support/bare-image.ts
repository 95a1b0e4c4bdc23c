/**
 * An image like the ones repositories bring: the sandbox image with python3 and node removed (one
 * `docker commit` of a container that deleted them as root, a layer of deletions only). What the
 * harness itself runs in a sandbox must not need either.
 */
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';

const REMOVE_RUNTIMES = 'rm -f /usr/bin/python3* /usr/bin/node /usr/bin/nodejs /usr/local/bin/node';

export interface BareImage {
  tag: string;
  remove(): Promise<void>;
}

/** Makes the image from `base`; `remove` deletes it. */
export async function imageWithoutPythonAndNode(docker: Docker, base: string): Promise<BareImage> {
  const tag = `agent-sandbox-bare:${randomUUID().slice(0, 8)}`;
  const container = await docker.createContainer({
    Image: base,
    User: '0:0',
    Cmd: ['bash', '-c', `${REMOVE_RUNTIMES} && ! command -v python3 node nodejs`],
    HostConfig: { NetworkMode: 'none' },
  });
  try {
    const stream = await container.attach({ stream: true, stdout: true, stderr: true });
    const said: Buffer[] = [];
    const sink = new PassThrough().on('data', (chunk: Buffer) => said.push(chunk));
    docker.modem.demuxStream(stream, sink, sink);
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    if (StatusCode !== 0)
      throw new Error(`removing python3 and node failed (${StatusCode}): ${Buffer.concat(said).toString('utf8')}`);
    const [repo, version] = tag.split(':');
    // The base image's configuration (user, working directory, command) stays as it was.
    await container.commit({ repo, tag: version, changes: ['USER agent', 'CMD ["sleep", "infinity"]'] });
  } finally {
    await container.remove({ force: true });
  }
  return {
    tag,
    remove: () =>
      docker
        .getImage(tag)
        .remove({ force: true })
        .then(() => undefined),
  };
}
