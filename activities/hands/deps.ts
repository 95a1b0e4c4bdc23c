/**
 * What every hands activity is built from: the worker's sandboxes, the roots a seed source may come
 * from, and the output and heartbeat settings.
 */
import * as os from 'node:os';
import { readPart, settingsPart, type Environment } from '../../common/env-settings';
import type { EgressHost } from '../egress/egress-host';
import type { SecretStore } from '../secrets/store';
import type { HandsHostIdentity } from './claim-host';
import { spillOptions, type SpillOptions } from './output';
import type { Sandboxes } from './sandboxes';
import { ALLOWED_ROOTS, defaultRoots } from './settings';

export { EXAMPLES_DIR } from './settings';

/**
 * The directories a local seed source may lie in: `AGENT_ALLOWED_ROOTS` of `env`, or by default the
 * hands worker user's home directory and the project's `examples/`.
 */
export function defaultAllowedRoots(env: Environment): string[] {
  return readPart('hands', ALLOWED_ROOTS_PART, env).roots;
}

const ALLOWED_ROOTS_PART = settingsPart({ title: 'Allowed roots', variables: { roots: ALLOWED_ROOTS } });

export interface HandsActivitiesDeps {
  sandboxes: Sandboxes;
  /** Directories a local seed source may lie in (default: the home directory and `examples/`; a worker passes `AGENT_ALLOWED_ROOTS`). */
  allowedRoots?: readonly string[];
  /** Output above this many bytes is spilled to a file (default 16 KiB). */
  spillThresholdBytes?: number;
  /** Output above this many lines is spilled to a file (default 400). */
  spillThresholdLines?: number;
  /** Most bytes of a command's output kept in the workspace (default 8 MiB); the rest is counted and dropped. */
  outputCaptureBytes?: number;
  /** How often a running activity heartbeats (default 1 s; the SDK throttles what it sends). */
  heartbeatIntervalMs?: number;
  /** This worker's host and its own queue (default: the machine's hostname, no queue of its own). */
  host?: Partial<HandsHostIdentity>;
  /** egress hook: the proxy every tool call's policy is given to (none: the sandbox has no way out). */
  egress?: EgressHost;
  /** The host's secret store: tool outputs are masked with it before they are recorded. */
  secrets?: SecretStore;
  /** A repository's `.agent/hooks.json` is read with the seed check (`AGENT_REPOSITORY_HOOKS`; default off). */
  repositoryHooks?: boolean;
}

/** The deps with their defaults resolved, as the activity functions take them. */
export interface HandsContext {
  sandboxes: Sandboxes;
  allowedRoots: readonly string[];
  spill: SpillOptions;
  outputCaptureBytes?: number;
  heartbeatEveryMs: number;
  host: HandsHostIdentity;
  egress?: EgressHost;
  secrets?: SecretStore;
  repositoryHooks: boolean;
}

export function handsContext(deps: HandsActivitiesDeps): HandsContext {
  return {
    sandboxes: deps.sandboxes,
    allowedRoots: deps.allowedRoots ?? defaultRoots(),
    spill: spillOptions(deps.spillThresholdBytes, deps.spillThresholdLines),
    ...(deps.outputCaptureBytes ? { outputCaptureBytes: deps.outputCaptureBytes } : {}),
    heartbeatEveryMs: deps.heartbeatIntervalMs ?? 1_000,
    host: {
      host: deps.host?.host ?? os.hostname(),
      ...(deps.host?.taskQueue ? { taskQueue: deps.host.taskQueue } : {}),
      namePrefix: deps.sandboxes.lifecycle.namePrefix,
    },
    ...(deps.egress ? { egress: deps.egress } : {}),
    ...(deps.secrets ? { secrets: deps.secrets } : {}),
    repositoryHooks: deps.repositoryHooks ?? false,
  };
}

/**
 * The session a hands call names. Histories recorded before the contract named it `sessionId` carry
 * `sessionId`; an activity retried from such a history still finds its sandbox.
 */
export function sessionOf(input: { sessionId?: string }): string {
  return input.sessionId ?? (input as { sandboxId?: string }).sandboxId ?? '';
}
