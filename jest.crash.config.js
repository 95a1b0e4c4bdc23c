/** The crash matrix: `npm run test:crash` (also run by .ci/run). */
const base = require('./test/support/jest-base');

module.exports = {
  ...base,
  roots: ['<rootDir>/test/crash'],
  reporters: ['default', ['<rootDir>/test/support/summary-reporter.js', { outputFile: 'test-results-crash.json' }]],
};
