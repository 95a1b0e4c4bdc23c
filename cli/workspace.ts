/**
 * Host-side look at a session's workspace volume (for `agent diff` and the demo): runs `git diff`
 * in a sandbox on that volume and removes the container afterwards, keeping the volume.
 */
import { createHandsActivities } from '../activities/hands/activities';
import { SandboxManager } from '../activities/hands/sandbox-manager';
import { requireDocker } from '../platform/docker-engine';
import { sandboxImageTag } from '../platform/sandbox-image';

export async function workspaceDiff(sessionId: string): Promise<{ diff: string; stat: string }> {
  const docker = await requireDocker();
  const manager = new SandboxManager({ docker, image: sandboxImageTag() });
  const hands = createHandsActivities({ manager });
  try {
    return await hands.workspaceDiff({ sandboxId: sessionId });
  } finally {
    await hands.destroySandbox({ sandboxId: sessionId, keepVolume: true }).catch(() => undefined);
  }
}
