/**
 * Jest runs TypeScript through SWC; the real Temporal dev server and Docker engine are started once
 * in globalSetup. The crash matrix (test/crash) is long and has its own config: `npm run test:crash`.
 */
const base = require('./test/support/jest-base');

module.exports = {
  ...base,
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/crash/'],
  reporters: ['default', ['<rootDir>/test/support/summary-reporter.js', { outputFile: 'test-results.json' }]],
};
