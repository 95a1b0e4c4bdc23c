/**
 * `npm run sandbox:build`: build the sandbox image unless its input-hash tag already exists, and the
 * sandbox tools unless their source-hash build already exists.
 */
import { ensureDockerEngine } from '../platform/docker-engine';
import { buildSandboxImage } from '../platform/sandbox-image';
import { runMain } from '../client/main';

runMain(async () => {
  const docker = await ensureDockerEngine((line) => console.log(line));
  const result = await buildSandboxImage(docker, (line) => console.log(line));
  console.log(
    result.tools.built
      ? `built the sandbox tools ${result.tools.path} in ${result.tools.seconds.toFixed(1)} s`
      : `the sandbox tools ${result.tools.path} are up to date`,
  );
  console.log(
    result.built
      ? `built ${result.tag} (${result.path} path) in ${result.seconds.toFixed(1)} s`
      : `${result.tag} is up to date`,
  );
});
