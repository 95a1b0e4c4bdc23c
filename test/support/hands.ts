/**
 * Helpers for the hands tests: the sandboxes on the real engine and image, unique sandbox ids that
 * are removed (container + volumes + a quota workspace's loop device and image) after the file, and
 * a quick shell in a sandbox.
 */
import type Docker from 'dockerode';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import type { ToolOutcome } from '../../common/hands';
import { containerNameOf } from '../../common/sandbox-names';
import { dockerClient } from '../../platform/docker-engine';
import { createSandboxes, type Sandboxes, type SandboxesOptions } from '../../activities/hands/sandboxes';
import { testPlatform } from './env';

export interface HandsFixture {
  sandboxes: Sandboxes;
  /** A fresh sandbox id, removed by `cleanup`. */
  sessionId(prefix?: string): string;
  /** Runs a bash snippet as `agent` in /workspace and returns stdout (throws on a non-zero exit). */
  sh(sessionId: string, script: string): Promise<string>;
  cleanup(): Promise<void>;
}

/**
 * Removes sandboxes completely — container, workspace and journal volumes, and a quota workspace's
 * loop device and image — the way `agent sandbox rm` does (removing the volume with the Docker API
 * alone would leave the loop device attached).
 */
export async function removeSandboxes(
  sessionIds: Iterable<string>,
  namePrefix?: string,
  docker: Docker = dockerClient(),
): Promise<void> {
  const { lifecycle } = createSandboxes({
    docker,
    image: testPlatform().sandboxImage,
    sandboxTools: testPlatform().sandboxTools,
    ...(namePrefix ? { namePrefix } : {}),
    warn: () => undefined,
  });
  for (const id of sessionIds) await lifecycle.remove(id, { keepVolume: false }).catch(() => undefined);
}

/**
 * Sandboxes that carry a label of their own (`agent.test-run`), so their inventory's `list` and `gc`
 * see only them: a test never removes a sandbox another run on the same host is using. The image and
 * the sandbox tools are the test run's unless given.
 */
export function handsFixture(
  options: Omit<SandboxesOptions, 'docker' | 'image' | 'sandboxTools'> &
    Partial<Pick<SandboxesOptions, 'image' | 'sandboxTools'>> = {},
): HandsFixture {
  const docker = dockerClient();
  const labels = { 'agent.test-run': randomUUID().slice(0, 8), ...options.labels };
  const { sandboxImage: image, sandboxTools } = testPlatform();
  const sandboxes = createSandboxes({ docker, image, sandboxTools, ...options, labels });
  const ids: string[] = [];
  return {
    sandboxes,
    sessionId(prefix = 'test') {
      const id = `${prefix}-${randomUUID().slice(0, 8)}`;
      ids.push(id);
      return id;
    },
    async sh(sessionId, script) {
      const { exitCode, stdout, stderr } = await sandboxes.commands.script(sessionId, script);
      if (exitCode !== 0) throw new Error(`sandbox script failed (${exitCode}): ${stderr}`);
      return stdout.toString('utf8');
    },
    async cleanup() {
      for (const id of ids) await sandboxes.lifecycle.remove(id, { keepVolume: false }).catch(() => undefined);
    },
  };
}

const execFileAsync = promisify(execFile);

/**
 * Runs a script in a session's sandbox as the agent, without blocking this process (workers in it
 * share the event loop): its output, or undefined when it fails (no container yet).
 */
export const inSandbox = async (sessionId: string, script: string): Promise<string | undefined> =>
  execFileAsync('docker', ['exec', '-u', AGENT_USER, containerNameOf(sessionId), 'bash', '-c', script], {
    encoding: 'utf8',
  }).then(
    ({ stdout }) => stdout,
    () => undefined,
  );

/**
 * A tool call's outcome as the operation reads it: its history holds `isError` and `synthetic` only
 * when true (`common/hands.ts` `ToolOutcome`).
 */
export const readOutcome = (outcome: ToolOutcome): ToolOutcome & { isError: boolean; synthetic: boolean } => ({
  ...outcome,
  isError: outcome.isError === true,
  synthetic: outcome.synthetic === true,
});
