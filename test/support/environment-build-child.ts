/**
 * A process that builds one environment and prints its progress, for the test that kills a worker
 * in the middle of a build (`test/environment/build.test.ts`). BUILD_PREFIX: the sandbox name
 * prefix; BUILD_ENVIRONMENT: the input's `environment` as JSON.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { createEnvironmentActivities } from '../../activities/environment/activities';
import { EgressHost } from '../../activities/egress/egress-host';
import { createSandboxes } from '../../activities/hands/sandboxes';
import { secretStore } from '../../activities/secrets/store';
import { dockerClient } from '../../platform/docker-engine';
import { testPlatform } from './env';

async function main(): Promise<void> {
  const docker = dockerClient();
  const egress = new EgressHost({ secrets: secretStore(new Map()), env: process.env, warn: () => undefined });
  const sandboxes = createSandboxes({
    docker,
    image: testPlatform().sandboxImage,
    sandboxTools: testPlatform().sandboxTools,
    egress,
    namePrefix: process.env.BUILD_PREFIX!,
  });
  const env = createEnvironmentActivities({
    docker,
    sandboxes,
    egress,
    allowedRoots: [os.homedir()],
    hostEnv: process.env,
    toolchainCacheDir: path.join(os.tmpdir(), 'agent-env-test-toolchains'),
  });
  const build = env.builder.build.bind(env.builder);
  env.builder.build = (recipe, onProgress, signal) =>
    build(
      recipe,
      (progress) => {
        process.stdout.write(`step ${progress.step}/${progress.steps} ${progress.title}\n`);
        onProgress(progress);
      },
      signal,
    );
  await env.prepareEnvironment({
    sessionId: `child-${process.pid}`,
    environment: JSON.parse(process.env.BUILD_ENVIRONMENT!),
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
