/**
 * Makes the real parts the tests need available: the temporal CLI, a Docker engine, the sandbox
 * image, the sandbox tools and the Chromium of the Web UI test. Prints only what it had to do.
 */
import { ensureDockerEngine } from '../platform/docker-engine';
import { buildSandboxImage } from '../platform/sandbox-image';
import { ensureTemporalCli } from '../platform/temporal-cli';
import { ensureChromium } from '../platform/chromium';
import { runMain } from '../client/main';

const say = (line: string): void => console.log(`[setup] ${line}`);

runMain(async () => {
  await ensureTemporalCli(say);
  const docker = await ensureDockerEngine(say);
  const image = await buildSandboxImage(docker, say);
  if (image.tools.built) say(`built the sandbox tools ${image.tools.path} in ${image.tools.seconds.toFixed(0)} s`);
  if (image.built) say(`built the sandbox image ${image.tag} in ${image.seconds.toFixed(0)} s`);
  ensureChromium(say);
});
