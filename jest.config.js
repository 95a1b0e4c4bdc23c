/**
 * Jest runs TypeScript through SWC; the real Temporal dev server and Docker engine are started once
 * in globalSetup. The crash matrix (test/crash) is long and has its own config: `npm run test:crash`;
 * the cluster's tests (test/cluster) run on the cluster of `npm run cluster`: `npm run test:cluster`;
 * the forge's (test/forge) on a real Gitea: `npm run test:forge`.
 */
const base = require('./test/support/jest-base');

module.exports = {
  ...base,
  testPathIgnorePatterns: [
    '/node_modules/',
    '<rootDir>/test/crash/',
    '<rootDir>/test/cluster/',
    '<rootDir>/test/forge/',
  ],
  reporters: ['default', ['<rootDir>/test/support/summary-reporter.js', { outputFile: 'test-results.json' }]],
};
