/**
 * The order test files start in. Jest's own runs the longest first when its cache has their times,
 * and the largest first when it has none (a fresh clone): the order then differs between CI and a
 * developer's checkout, and in CI the two long CPU-bound files (real toolchains building in
 * containers) start together while the files that mostly wait run later, together, leaving a core
 * idle. The files named here start first, in this order — a CPU-bound one beside files that mostly
 * wait (schedules firing on the server's clock, the bench's fixed model latency, a paced load) — and
 * the rest follow in jest's order.
 */
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const FIRST = [
  // The cluster stage (run in band): its 3-minute soak paces its own load and leaves a core to the
  // crash matrix that `.ci/run` runs beside the stage; the stage's CPU-bound files come after it.
  'test/cluster/soak.test.ts',
  // npm test (two at a time): the longest CPU-bound file, and beside it the files that mostly wait,
  // then the other CPU-bound one.
  'test/environment/current-ecosystems.test.ts',
  'test/coding-task/schedules.test.ts',
  'test/bench/bench-smoke.test.ts',
  'test/environment/real-projects.test.ts',
];

class OrderedSequencer extends Sequencer {
  sort(tests) {
    const rank = (test) => {
      const file = path.relative(test.context.config.rootDir, test.path).split(path.sep).join('/');
      const at = FIRST.indexOf(file);
      return at === -1 ? FIRST.length : at;
    };
    // Array.prototype.sort is stable: the rest keep jest's order.
    return [...super.sort(tests)].sort((a, b) => rank(a) - rank(b));
  }
}

module.exports = OrderedSequencer;
