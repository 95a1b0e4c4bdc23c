/**
 * The harness's own programs inside a sandbox: one static binary (`sandbox-tools/` at the project's
 * root, Go, standard library only; built by `platform/sandbox-tools.ts`) that the hands mount
 * read-only into every container at `SANDBOX_TOOLS` and run from there:
 *
 *  - `executor`: the sandbox's executor (`channel.ts` speaks its protocol);
 *  - `forward <port> <socket>`: the egress forwarder, run by the container's first process
 *    (`activities/egress/egress-host.ts`);
 *  - `read-file`, `write-file`, `edit-file <JSON request | @file>`: the file tools' helpers
 *    (`activities/hands/tools/`);
 *  - `run`: the run wrapper around every tool command (`run-wrapper.ts`, `scripts.ts`).
 *
 * It needs nothing from the image, so no python3 and no node. What remains the image's business:
 * bash, coreutils, util-linux (`setpriv`) and perl, which the hands' bookkeeping scripts use (the
 * checkpoints: `scripts/`, `checkpoints/`), and whatever the agent itself runs (git, rg for the search
 * tools, compilers, package managers).
 */
import type Docker from 'dockerode';

/** Where the binary is in every sandbox container. */
export const SANDBOX_TOOLS = '/opt/agent/bin/agent-sandbox-tools';

/** The read-only bind mount of the host's binary (`hostPath`) at `SANDBOX_TOOLS`. */
export function sandboxToolsMount(hostPath: string): Docker.MountSettings {
  return { Type: 'bind', Source: hostPath, Target: SANDBOX_TOOLS, ReadOnly: true };
}
