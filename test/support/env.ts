/**
 * What the jest global setup hands to test files (through environment variables, which survive the
 * hop from the setup process into test workers).
 */
export interface TestPlatform {
  /** gRPC address of the Temporal server the tests use. */
  temporalAddress: string;
  namespace: string;
  /** Path of the workflow bundle built once by the global setup (product + test workflows). */
  workflowBundlePath: string;
  /** The sandbox image tag (built by `npm run sandbox:build` / `.ci/run`). */
  sandboxImage: string;
  /** The sandbox tools binary every sandbox container mounts (built with the image). */
  sandboxTools: string;
  /** The resolved temporal CLI, for tests that start their own server. */
  temporalCli: string;
}

export function testPlatform(): TestPlatform {
  const read = (name: string): string => {
    const value = process.env[name];
    if (!value)
      throw new Error(`${name} is not set: run the tests through jest (its global setup prepares the platform)`);
    return value;
  };
  return {
    temporalAddress: read('TEST_TEMPORAL_ADDRESS'),
    namespace: read('TEST_TEMPORAL_NAMESPACE'),
    workflowBundlePath: read('TEST_WORKFLOW_BUNDLE'),
    sandboxImage: read('TEST_SANDBOX_IMAGE'),
    sandboxTools: read('TEST_SANDBOX_TOOLS'),
    temporalCli: read('TEST_TEMPORAL_CLI'),
  };
}
