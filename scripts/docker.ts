/** `npm run docker:ensure`: make a Docker engine reachable (installing and starting one as root on Debian). */
import { describeDockerEndpoint, ensureDockerEngine } from '../platform/docker-engine';
import { runMain } from '../client/main';

runMain(async () => {
  const docker = await ensureDockerEngine((line) => console.log(line));
  const version = await docker.version();
  console.log(`Docker engine ${version.Version} (API ${version.ApiVersion}) answers at ${describeDockerEndpoint()}`);
});
