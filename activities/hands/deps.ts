/** What every hands activity is built from: the sandbox manager and the output and heartbeat settings. */
import * as os from 'node:os';
import type { HandsHostIdentity } from './claim-host';
import { spillOptions, type SpillOptions } from './output';
import type { SandboxManager } from './sandbox-manager';

export interface HandsActivitiesDeps {
  manager: SandboxManager;
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
}

/** The deps with their defaults resolved, as the activity functions take them. */
export interface HandsContext {
  manager: SandboxManager;
  spill: SpillOptions;
  outputCaptureBytes?: number;
  heartbeatEveryMs: number;
  host: HandsHostIdentity;
}

export function handsContext(deps: HandsActivitiesDeps): HandsContext {
  return {
    manager: deps.manager,
    spill: spillOptions(deps.spillThresholdBytes, deps.spillThresholdLines),
    ...(deps.outputCaptureBytes ? { outputCaptureBytes: deps.outputCaptureBytes } : {}),
    heartbeatEveryMs: deps.heartbeatIntervalMs ?? 1_000,
    host: {
      host: deps.host?.host ?? os.hostname(),
      ...(deps.host?.taskQueue ? { taskQueue: deps.host.taskQueue } : {}),
      namePrefix: deps.manager.namePrefix,
    },
  };
}

/**
 * The session a hands call names. Histories recorded before the contract named it `sessionId` carry
 * `sessionId`; an activity retried from such a history still finds its sandbox.
 */
export function sessionOf(input: { sessionId?: string }): string {
  return input.sessionId ?? (input as { sandboxId?: string }).sandboxId ?? '';
}
