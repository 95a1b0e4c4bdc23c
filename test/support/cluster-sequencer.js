/**
 * The order the cluster stage's files start in (it runs them one at a time). Its 3-minute soak paces
 * its own load, about half the machine: the stages `.ci/run` runs beside this one take the other
 * half; run last, after they ended, it leaves a core idle for its three minutes. Jest starts the
 * longest files first when its cache has their times, and the largest first when it has none (a
 * fresh clone): the soak then came last and the run took 1,610 s against 1,492 s with the cache. So
 * the two long files start first, in the order the cache gave them, and the rest follow in jest's
 * order.
 */
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const FIRST = ['test/cluster/combined-faults.test.ts', 'test/cluster/soak.test.ts'];

class ClusterStageSequencer extends Sequencer {
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

module.exports = ClusterStageSequencer;
