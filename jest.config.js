/**
 * Jest runs TypeScript through SWC; the real Temporal dev server and Docker engine are started once
 * in globalSetup. The crash matrix (test/crash) is long and has its own config: `npm run test:crash`.
 */
const base = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 120000,
};

module.exports = {
  ...base,
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/crash/'],
  reporters: ['default', ['<rootDir>/test/support/summary-reporter.js', { outputFile: 'test-results.json' }]],
};
module.exports.base = base;
