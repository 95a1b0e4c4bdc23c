/**
 * What the harness left on a Docker host: containers and volumes with the harness label
 * (`agent.harness=1`), loop devices attached to workspace images (`agent-ws-<id>.ext4`) and image
 * files in the workspace image directory. A sandbox labelled `agent.keep=<reason>` is kept on purpose
 * (its loop device and image too) and is listed apart. Used by `.ci/run`'s leak check after the
 * tests: anything else left is a leak.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type Docker from 'dockerode';
import { SANDBOX_LABELS } from '../common/sandbox-names';

export interface SandboxLeaks {
  containers: string[];
  volumes: string[];
  /** `/dev/loopN -> <image>` */
  loopDevices: string[];
  imageFiles: string[];
  /** Kept on purpose: `<name> (<reason>)`. */
  kept: string[];
}

const WORKSPACE_IMAGE = /(^|\/)agent-ws-[^/]+\.ext4(\.[^/]*)?( \(deleted\))?$/;

/** Everything the harness left; `imageDirs` are where workspace images are kept. */
export async function findSandboxLeaks(docker: Docker, imageDirs: string[]): Promise<SandboxLeaks> {
  const filters = { label: [`${SANDBOX_LABELS.harness}=1`] };
  const containers = await docker.listContainers({ all: true, filters });
  const volumes = (await docker.listVolumes({ filters })).Volumes ?? [];
  const leaks: SandboxLeaks = { containers: [], volumes: [], loopDevices: [], imageFiles: [], kept: [] };
  const keptImages = new Set<string>();

  for (const container of containers) {
    const name = (container.Names[0] ?? container.Id).replace(/^\//, '');
    const reason = container.Labels[SANDBOX_LABELS.keep];
    if (reason) leaks.kept.push(`${name} (${reason})`);
    else leaks.containers.push(name);
  }
  for (const volume of volumes) {
    const reason = volume.Labels?.[SANDBOX_LABELS.keep];
    const image = volume.Labels?.[SANDBOX_LABELS.quotaImage];
    if (reason) {
      leaks.kept.push(`${volume.Name} (${reason})`);
      if (image) keptImages.add(image);
    } else leaks.volumes.push(volume.Name);
  }
  for (const { device, backingFile } of loopDevices()) {
    if (!WORKSPACE_IMAGE.test(backingFile)) continue;
    if (keptImages.has(backingFile)) continue;
    leaks.loopDevices.push(`${device} -> ${backingFile}`);
  }
  for (const dir of imageDirs) {
    if (!fs.existsSync(dir)) continue;
    for (const file of fs.readdirSync(dir)) {
      const image = path.join(dir, file);
      if (WORKSPACE_IMAGE.test(file) && !keptImages.has(image)) leaks.imageFiles.push(image);
    }
  }
  return leaks;
}

/** The attached loop devices and their backing files (from /sys). */
function loopDevices(): { device: string; backingFile: string }[] {
  let names: string[];
  try {
    names = fs.readdirSync('/sys/block').filter((name) => /^loop\d+$/.test(name));
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    try {
      const backingFile = fs.readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').trim();
      return [{ device: `/dev/${name}`, backingFile }];
    } catch {
      return []; // not attached
    }
  });
}

/** The leaks that were not there already (`baseline`, recorded before the tests). */
export function withoutBaseline(leaks: SandboxLeaks, baseline: SandboxLeaks): SandboxLeaks {
  const fresh = (now: string[], before: string[]) => now.filter((item) => !before.includes(item));
  return {
    containers: fresh(leaks.containers, baseline.containers),
    volumes: fresh(leaks.volumes, baseline.volumes),
    loopDevices: fresh(leaks.loopDevices, baseline.loopDevices),
    imageFiles: fresh(leaks.imageFiles, baseline.imageFiles),
    kept: leaks.kept,
  };
}

export function leakCount(leaks: SandboxLeaks): number {
  return leaks.containers.length + leaks.volumes.length + leaks.loopDevices.length + leaks.imageFiles.length;
}

/** The leak report: one line per leak, what to run about it, and what was kept on purpose. */
export function formatLeaks(leaks: SandboxLeaks): string[] {
  const lines: string[] = [];
  for (const name of leaks.containers) lines.push(`leaked container: ${name}`);
  for (const name of leaks.volumes) lines.push(`leaked volume: ${name}`);
  for (const device of leaks.loopDevices) lines.push(`leaked loop device: ${device}`);
  for (const image of leaks.imageFiles) lines.push(`leaked workspace image: ${image}`);
  if (leakCount(leaks) > 0) {
    lines.push(
      'remove them with `bin/agent sandbox rm <id>` (or `bin/agent sandbox gc --older-than 0s --volumes`); ' +
        'a test that keeps a sandbox on purpose labels it agent.keep=<reason>',
    );
  }
  for (const kept of leaks.kept) lines.push(`kept on purpose: ${kept}`);
  return lines;
}
