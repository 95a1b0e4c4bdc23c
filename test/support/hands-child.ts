/**
 * Runs one `runTool` call in its own process, so a test can SIGKILL it mid-call the way a hands worker
 * dies. argv: <RunToolInput JSON> <sandbox image>; the sandbox tools are the test run's
 * (`TEST_SANDBOX_TOOLS`). Prints the ToolOutcome as JSON when it finishes.
 */
import { createHandsActivities } from '../../activities/hands/activities';
import { createSandboxes } from '../../activities/hands/sandboxes';
import { dockerClient } from '../../platform/docker-engine';
import { testPlatform } from './env';

const [input, image] = process.argv.slice(2);
const hands = createHandsActivities({
  sandboxes: createSandboxes({ docker: dockerClient(), image, sandboxTools: testPlatform().sandboxTools }),
});
hands
  .runTool(JSON.parse(input))
  .then((outcome) => process.stdout.write(JSON.stringify(outcome)))
  .catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
