/**
 * The names of Worker Deployments and their builds (docs/production.md#rolling-out-new-workflow-code),
 * as the server takes them. Dependency-free: the command table checks them when it parses.
 */

/** A deployment name: the server refuses `.` and `:` in one (they separate it from the build id). */
export const DEPLOYMENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;
/** A build id: `agent+<16 hex>` by default; a release name (`v1.4.2`) does too. */
export const BUILD_ID = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$/;

/** What is wrong with a deployment name, or undefined. */
export function deploymentNameProblem(name: string): string | undefined {
  return DEPLOYMENT_NAME.test(name)
    ? undefined
    : `${JSON.stringify(name)} is not a deployment name: letters, digits, "-" and "_", at most 100, starting with a letter or digit`;
}

/** What is wrong with a build id, or undefined. */
export function buildIdProblem(buildId: string): string | undefined {
  return BUILD_ID.test(buildId)
    ? undefined
    : `${JSON.stringify(buildId)} is not a build id: letters, digits, ".", "+", "-" and "_", at most 100, starting with a letter or digit`;
}

/** A version as the server's search attributes write it (`TemporalWorkerDeploymentVersion`): `<deployment>:<build id>`. */
export function versionText(version: { deploymentName: string; buildId: string }): string {
  return `${version.deploymentName}:${version.buildId}`;
}
