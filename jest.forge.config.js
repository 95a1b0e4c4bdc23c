/**
 * The forge stage: `npm run test:forge` (also run by .ci/run) — pull requests, reviews, checks and
 * webhooks on a real Gitea built from its Go module (`platform/gitea.ts`); each file starts its own.
 */
const base = require('./test/support/jest-base');

module.exports = {
  ...base,
  testMatch: ['<rootDir>/test/forge/**/*.test.ts'],
  reporters: ['default', ['<rootDir>/test/support/summary-reporter.js', { outputFile: 'test-results-forge.json' }]],
};
