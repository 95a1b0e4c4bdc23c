/**
 * Which paths are tests or decide how tests run. The report flags existing ones that an accepted
 * feature modified or deleted (an agent can make a recorded `npm test` pass by editing the test
 * script or the tests): adding new tests is expected and not flagged.
 */
const TEST_PATH = [
  /(^|\/)(test|tests|__tests__|spec|specs|e2e)\//i,
  /\.(test|spec)\.[cm]?[jt]sx?$/i,
  /(^|\/)test_[^/]*\.py$/,
  /_test\.(py|go|rb)$/,
  /(^|\/)conftest\.py$/,
];
const VERIFICATION_CONFIG = [
  /^(.*\/)?package\.json$/,
  /^(.*\/)?(GNUm|M|m)akefile$/,
  /^init\.sh$/,
  /^(.*\/)?(pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml|noxfile\.py)$/,
  /^(.*\/)?(jest|vitest|karma|playwright|cypress)\.config\.[cm]?[jt]s$/,
  /^(.*\/)?\.mocharc(\.[a-z]+)?$/,
];

export function isTestOrVerificationFile(path: string): boolean {
  return TEST_PATH.some((re) => re.test(path)) || VERIFICATION_CONFIG.some((re) => re.test(path));
}

/** From `git diff --name-status` entries: existing test files modified, deleted or renamed away. */
export function changedTestFiles(changes: Array<{ status: string; path: string }>): string[] {
  return changes
    .filter((change) => /^[MDRT]/.test(change.status) && isTestOrVerificationFile(change.path))
    .map((change) => `${change.path} (${describeStatus(change.status)})`);
}

function describeStatus(status: string): string {
  if (status.startsWith('D')) return 'deleted';
  if (status.startsWith('R')) return 'renamed';
  return 'modified';
}
