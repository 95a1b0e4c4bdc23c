/**
 * Host-side look at a session's workspace volume (for `agent diff` and the demo): runs `git diff`
 * in the session's sandbox. A container started just for this is removed afterwards (the volume
 * stays); a running operation's container is left alone.
 */
import { createHandsActivities } from '../activities/hands/activities';
import { createSandboxes } from '../activities/hands/sandboxes';
import { requireDocker } from '../platform/docker-engine';
import { sandboxImageTag } from '../platform/sandbox-image';
import { ensureSandboxTools } from '../platform/sandbox-tools';

export async function workspaceDiff(sessionId: string): Promise<{ diff: string; stat: string }> {
  const docker = await requireDocker();
  const sandboxes = createSandboxes({ docker, image: sandboxImageTag(), sandboxTools: ensureSandboxTools().path });
  const { created } = await sandboxes.lifecycle.ensure(sessionId);
  try {
    return await createHandsActivities({ sandboxes }).workspaceDiff({ sessionId: sessionId });
  } finally {
    if (created) await sandboxes.lifecycle.remove(sessionId, { keepVolume: true }).catch(() => undefined);
  }
}
