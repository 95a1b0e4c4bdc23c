/**
 * Writes the run's counts to `test-results.json` (or the `outputFile` option) (jest's own aggregated-result shape, trimmed), so
 * `.ci/run` can print `tests: N passed, M failed` after running exactly `npm test`.
 */
const fs = require('node:fs');
const path = require('node:path');

class SummaryReporter {
  constructor(globalConfig, options = {}) {
    this.rootDir = globalConfig.rootDir;
    this.outputFile = options.outputFile ?? 'test-results.json';
  }

  onRunComplete(_contexts, results) {
    const summary = {
      numTotalTests: results.numTotalTests,
      numPassedTests: results.numPassedTests,
      numFailedTests: results.numFailedTests,
      numPendingTests: results.numPendingTests,
      numTotalTestSuites: results.numTotalTestSuites,
      numFailedTestSuites: results.numFailedTestSuites,
      numRuntimeErrorTestSuites: results.numRuntimeErrorTestSuites,
      success: results.success,
      failedSuites: results.testResults
        .filter((suite) => suite.numFailingTests > 0 || suite.testExecError)
        .map((suite) => path.relative(this.rootDir, suite.testFilePath)),
      // Timeouts are set for machines several times slower than a developer's; these say how close a run came.
      slowestTests: results.testResults
        .flatMap((suite) =>
          suite.testResults.map((test) => ({
            file: path.relative(this.rootDir, suite.testFilePath),
            title: test.fullName,
            durationMs: test.duration ?? 0,
          })),
        )
        .sort((a, b) => b.durationMs - a.durationMs)
        .slice(0, 8),
      // Where a run's wall time goes: a few files run at a time, so the longest decide its tail.
      slowestFiles: results.testResults
        .map((suite) => ({
          file: path.relative(this.rootDir, suite.testFilePath),
          durationMs: suite.perfStats ? suite.perfStats.end - suite.perfStats.start : 0,
        }))
        .sort((a, b) => b.durationMs - a.durationMs)
        .slice(0, 12),
      // When each file ran, in seconds from the run's start: idle workers and the tail show here.
      timeline: results.testResults
        .filter((suite) => suite.perfStats)
        .map((suite) => ({
          file: path.relative(this.rootDir, suite.testFilePath),
          startS: Math.round((suite.perfStats.start - results.startTime) / 1000),
          endS: Math.round((suite.perfStats.end - results.startTime) / 1000),
        }))
        .sort((a, b) => a.startS - b.startS),
    };
    fs.writeFileSync(path.join(this.rootDir, this.outputFile), JSON.stringify(summary, null, 2));
  }
}

module.exports = SummaryReporter;
