/** Settings shared by the jest configs (`jest.config.js`, `jest.crash.config.js`, `jest.cluster.config.js`). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  // A limit against a hang, not a speed check: machines of the same kind differ 3×, and CI runs builds beside the tests.
  testTimeout: 360000,
};
