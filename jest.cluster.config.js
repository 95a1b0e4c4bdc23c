/**
 * The cluster stage: `npm run test:cluster` (also run by .ci/run) against the cluster of `npm run
 * cluster`. Its own tests (test/cluster), and the core paths again on the cluster: an operation's
 * tools, a session's lanes, and real worker processes SIGKILLed under an operation and a coding task.
 */
const base = require('./test/support/jest-base');

module.exports = {
  ...base,
  testMatch: [
    '<rootDir>/test/cluster/**/*.test.ts',
    '<rootDir>/test/operation/operation.test.ts',
    '<rootDir>/test/session/lanes.test.ts',
    '<rootDir>/test/hooks/worker-kill.test.ts',
    '<rootDir>/test/coding-task/worker-kill.test.ts',
  ],
  testSequencer: '<rootDir>/test/support/cluster-sequencer.js',
  reporters: ['default', ['<rootDir>/test/support/summary-reporter.js', { outputFile: 'test-results-cluster.json' }]],
};
