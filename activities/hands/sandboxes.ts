/**
 * The sandboxes of one hands worker, by job: their lifecycle (`sandbox-lifecycle.ts`), the commands
 * run in them (`sandbox-commands.ts`), the files copied into them (`sandbox-files.ts`), their
 * inventory (`sandbox-inventory.ts`) and their checkpoints (`checkpoints/`). All Docker access of
 * the hands goes through these. Made once per worker and shared by its hands and repo activities:
 * the lifecycle and the commands share the sandboxes' executors and the creations in flight.
 */
import type Docker from 'dockerode';
// egress hook: the container's way out through the host's proxy (activities/egress/).
import type { SandboxEgressWiring } from '../egress/egress-host';
import { SandboxCheckpoints } from './checkpoints/sandbox-checkpoints';
import { SandboxError } from './docker-calls';
import { SandboxCommands } from './sandbox-commands';
import { SandboxFiles } from './sandbox-files';
import { SandboxInventory } from './sandbox-inventory';
import { SandboxLifecycle } from './sandbox-lifecycle';
import type { SandboxLimits } from './sandbox-spec';
import type { WorkspaceQuota } from './workspace-quota';

export interface SandboxesOptions {
  docker: Docker;
  /** The sandbox image tag (`sandboxImageTag()`). */
  image: string;
  /** The sandbox tools binary on this host, mounted into every container (`SandboxLifecycleOptions.sandboxTools`). */
  sandboxTools: string;
  limits?: Partial<SandboxLimits>;
  /** Only `none` is supported: sandboxes have no network. */
  network?: 'none';
  /** What container and volume names start with (default `agent-`; see `common/sandbox-names.ts`). */
  namePrefix?: string;
  /** A disk quota for new workspace volumes (`SandboxLifecycleOptions.quota`). */
  quota?: WorkspaceQuota | null;
  /**
   * Extra labels on every container and volume made; the inventory then sees only sandboxes that
   * carry them (sandboxes scoped to, say, one test run), and `agent.keep` marks a sandbox kept on
   * purpose.
   */
  labels?: Record<string, string>;
  /** Where warnings go (default: stderr). */
  warn?: (line: string) => void;
  /** egress hook: the wiring to the hands worker's egress proxy (`SandboxLifecycleOptions.egress`). */
  egress?: SandboxEgressWiring;
  /** Run commands through a persistent executor per sandbox (default), or `false`: a `docker exec` each. */
  executor?: boolean;
}

export interface Sandboxes {
  lifecycle: SandboxLifecycle;
  commands: SandboxCommands;
  files: SandboxFiles;
  inventory: SandboxInventory;
  /** The sessions' checkpoints: recording the workspace, restoring one into a new session. */
  checkpoints: SandboxCheckpoints;
}

export function createSandboxes(options: SandboxesOptions): Sandboxes {
  if (options.network !== undefined && options.network !== 'none')
    throw new SandboxError('invalid', `network ${String(options.network)} is not supported`);
  const { docker, namePrefix, labels, egress } = options;
  const commands = new SandboxCommands({
    docker,
    ...(namePrefix !== undefined ? { namePrefix } : {}),
    ...(egress ? { egress } : {}),
    ...(options.executor !== undefined ? { executor: options.executor } : {}),
  });
  const lifecycle = new SandboxLifecycle({ ...options, commands });
  return {
    lifecycle,
    commands,
    files: new SandboxFiles({ docker, namePrefix: lifecycle.namePrefix }),
    inventory: new SandboxInventory({
      docker,
      namePrefix: lifecycle.namePrefix,
      ...(labels ? { labels } : {}),
      quota: lifecycle.quota,
    }),
    checkpoints: new SandboxCheckpoints({ docker, lifecycle, commands, ...(labels ? { labels } : {}) }),
  };
}
