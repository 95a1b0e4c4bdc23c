/**
 * The project and the scripted agent of the continue-the-work scenario (`continue.ts`): a Node
 * project of F small modules (`src/fNN.js`, each with a test and a page of reference notes,
 * `docs/fNN.md`), its feature list, and an agent that implements one feature in the same nine
 * turns whichever way the work is run — read the feature's notes and those of the feature before,
 * read the modules it builds on, write the module (with a bug) and its test, run the tests, fix the
 * bug, run them again, commit.
 *
 * The agent plays two parts, told apart by the request:
 *  - one agent carrying the work in one conversation (the resume ways): a session lane whose
 *    prompts ask for a range of features; it implements them in order and marks each passing;
 *  - a coding task's feature operation (the handoff way; the goal's `id:` line names the feature):
 *    it checks the handoff against git first, does the same nine turns, and rewrites HANDOFF.md.
 * Summary calls get a summary; a prompt carrying `SWITCH_PROBE` gets a short text answer.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { COMPACTION_REQUEST_MARKER } from '../../common/context';
import { FEATURE_HEADING } from '../../common/task-prompts';
import { firstUserText, toolIds } from '../../scripted-model/scenarios/coding-task';
import type { ScriptedRequest, ScriptedTurn } from '../../scripted-model/script';

/** How big the work is: features, the bytes of each feature's notes, the characters of each reply. */
export interface ContinueWork {
  features: number;
  docBytes: number;
  replyChars: number;
}

/** Starts every prompt of the one-agent lane: how the scripted agent recognises it. */
export const LANE_MARKER = '[continue-the-work]';
/** A prompt that only asks for a short note (the model-switch measurements). */
export const SWITCH_PROBE = '[switch-probe]';

export const featureId = (k: number): string => `f${String(k).padStart(2, '0')}`;
const featureNumber = (id: string): number => Number(/^f(\d+)$/.exec(id)?.[1] ?? NaN);

const PAD = 'It keeps the arithmetic in one place so the callers stay small, and it never mutates its input.';

/** The module of feature k: a weighted sum; `buggy` is the first version the agent writes (off by one). */
export function moduleSource(k: number, buggy = false): string {
  const id = featureId(k);
  const notes = Array.from({ length: 24 }, (_, i) => ` * ${id} note ${i + 1}: ${PAD}`).join('\n');
  return `'use strict';
/**
 * ${id}: the weighted sum of a list of numbers, value i weighted by i + ${k} (docs/${id}.md).
${notes}
 */
function ${id}(values) {
  return values.reduce((sum, value, i) => sum + value * (i + ${buggy ? k - 1 : k}), 0);
}

module.exports = ${id};
`;
}

/** The expected value of `fk([1, 2, 3])`: 1·k + 2·(k+1) + 3·(k+2). */
const expected = (k: number): number => 6 * k + 8;

export function testSource(k: number): string {
  const id = featureId(k);
  return `'use strict';
const test = require('node:test');
const assert = require('node:assert');
const ${id} = require('../src/${id}.js');

test('${id} weighs value i by i + ${k}', () => {
  assert.strictEqual(${id}([1, 2, 3]), ${expected(k)});
  assert.strictEqual(${id}([]), 0);
});
`;
}

/** The feature's reference notes: `bytes` bytes of lines (fewer than the spill's 400 lines). */
export function docSource(k: number, bytes: number): string {
  const id = featureId(k);
  const lines: string[] = [`# ${id}: reference notes`, ''];
  let size = lines.join('\n').length;
  for (let n = 1; size < bytes; n++) {
    const line = `${id}.${String(n).padStart(3, '0')} the weighted sum takes values in order; value ${n} gets weight ${n + k - 1}; ${PAD}`;
    lines.push(line);
    size += line.length + 1;
  }
  return `${lines.join('\n')}\n`.slice(0, bytes);
}

export function featureEntry(k: number, passes: boolean) {
  const id = featureId(k);
  return {
    id,
    category: 'module',
    description: `src/${id}.js exports ${id}(values): the sum of value i times i + ${k}`,
    steps: [`node -e "console.log(require('./src/${id}.js')([1,2,3]))"`, `It prints ${expected(k)}`],
    verify: `node --test test/${id}.test.js`,
    passes,
  };
}

function handoff(work: ContinueWork, done: number): string {
  const next = done < work.features ? featureId(done + 1) : 'nothing';
  return `# Handoff

## Goal
Implement the ${work.features} modules of feature_list.json (src/fNN.js, each with its test), one feature per session.

## Completed
- f01 to ${featureId(done)} (${done} features), each committed with its test

## Remaining
- ${done < work.features ? `${next} to ${featureId(work.features)}` : 'nothing'}

## Changed Files
- src/fNN.js, test/fNN.test.js per feature (see \`git log\`)

## Decisions
- One module per feature; each builds on the two before it. The notes of feature fNN are docs/fNN.md.

## Tests
- \`npm test\` (node --test over test/): all pass

## Known Problems
- none

## Next Step
- Implement ${next}: read docs/${next}.md first.

## Verification
- The feature's verify command in feature_list.json, and \`npm test\`.
`;
}

const MARK_PASSING = `'use strict';
// node scripts/mark-passing.js <id>: sets the feature's passes flag in feature_list.json.
const fs = require('node:fs');
const list = JSON.parse(fs.readFileSync('feature_list.json', 'utf8'));
for (const feature of list) if (feature.id === process.argv[2]) feature.passes = true;
fs.writeFileSync('feature_list.json', JSON.stringify(list, null, 2) + '\\n');
`;

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, LANG: 'C' } }).trim();
const commit = (cwd: string, subject: string): void => {
  git(cwd, 'add', '-A');
  git(cwd, '-c', 'user.name=bench', '-c', 'user.email=bench@example.invalid', 'commit', '-q', '-m', subject);
};

/**
 * Writes the project into `dir` as a git repository: the feature list (none passing), notes, init.sh
 * and a handoff in one commit; then, for the first `done` features, each feature's module and test in
 * a commit of its own (marked passing), as the agent would have left them.
 */
export function writeProject(dir: string, work: ContinueWork, done = 0): void {
  fs.mkdirSync(path.join(dir, 'docs'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'src'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'test'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'scripts'), { recursive: true });
  const file = (name: string, content: string, mode?: number) =>
    fs.writeFileSync(path.join(dir, name), content, mode === undefined ? undefined : { mode });
  file(
    'package.json',
    `${JSON.stringify({ name: 'bench-modules', private: true, scripts: { test: 'node --test test/' } }, null, 2)}\n`,
  );
  file('README.md', `# bench-modules\n\n${work.features} small modules, one per feature (feature_list.json).\n`);
  file('init.sh', '#!/usr/bin/env bash\nset -euo pipefail\ncd "$(dirname "$0")"\nnode --version\n', 0o755);
  file('scripts/mark-passing.js', MARK_PASSING);
  file('src/index.js', "'use strict';\n// One module per feature: src/fNN.js.\nmodule.exports = {};\n");
  file(
    'test/index.test.js',
    "'use strict';\nrequire('node:test')('the project loads', () => require('../src/index.js'));\n",
  );
  for (let k = 1; k <= work.features; k++) file(`docs/${featureId(k)}.md`, docSource(k, work.docBytes));
  const list = (passing: number) =>
    `${JSON.stringify(
      Array.from({ length: work.features }, (_, i) => featureEntry(i + 1, i < passing)),
      null,
      2,
    )}\n`;
  file('feature_list.json', list(0));
  file('HANDOFF.md', handoff(work, 0).replace('f01 to f00 (0 features), each committed with its test', 'nothing yet'));
  git(dir, 'init', '-q', '-b', 'main');
  commit(dir, `bench-modules: ${work.features} features to build`);
  for (let k = 1; k <= done; k++) {
    file(`src/${featureId(k)}.js`, moduleSource(k));
    file(`test/${featureId(k)}.test.js`, testSource(k));
    file('feature_list.json', list(k));
    file('HANDOFF.md', handoff(work, k));
    commit(dir, `Feature ${featureId(k)}: src/${featureId(k)}.js and its test`);
  }
}

type Call = { name: string; input: Record<string, unknown> };

/** Turns of one feature in every way (`featureTurns`). */
export const FEATURE_TURNS = 9;

/** The reply text of a turn: `chars` characters, different for every feature and turn. */
function prose(k: number, turn: number, what: string, chars: number): string {
  const sentence = `${featureId(k)}, step ${turn}: ${what} `;
  return sentence.repeat(Math.ceil(chars / sentence.length)).slice(0, Math.max(chars, what.length));
}

/**
 * The nine turns of feature k, the same in every way; `lane` decides how the last one records the
 * feature (the lane's agent marks it passing itself; a task's operation leaves that to the harness).
 */
export function featureTurns(k: number, work: ContinueWork, lane: boolean): Array<{ text: string; call: Call }> {
  const id = featureId(k);
  const previous = [k - 2, k - 1].filter((n) => n >= 1).map((n) => `src/${featureId(n)}.js`);
  const say = (turn: number, what: string) => prose(k, turn, what, work.replyChars);
  const bash = (command: string): Call => ({ name: 'bash', input: { command } });
  const related = k > 1 ? `docs/${featureId(k - 1)}.md` : 'README.md';
  return [
    { text: say(1, `reading the notes of ${id}.`), call: bash(`cat docs/${id}.md`) },
    { text: say(2, 'reading the notes of the feature it follows.'), call: bash(`cat ${related}`) },
    {
      text: say(3, 'reading the modules it builds on.'),
      call: bash(previous.length ? `cat ${previous.join(' ')} src/index.js` : 'cat src/index.js package.json'),
    },
    {
      text: say(4, `writing src/${id}.js.`),
      call: { name: 'write_file', input: { path: `src/${id}.js`, content: moduleSource(k, true) } },
    },
    {
      text: say(5, `writing test/${id}.test.js.`),
      call: { name: 'write_file', input: { path: `test/${id}.test.js`, content: testSource(k) } },
    },
    { text: say(6, 'running the tests.'), call: bash('npm test 2>&1 | tail -n 60') },
    {
      text: say(7, 'the weight is off by one; fixing it.'),
      call: {
        name: 'edit_file',
        input: { path: `src/${id}.js`, old_text: `(i + ${k - 1})`, new_text: `(i + ${k})` },
      },
    },
    { text: say(8, 'running the tests again.'), call: bash('npm test 2>&1 | tail -n 40') },
    {
      text: say(9, `committing ${id}.`),
      call: bash(
        `${lane ? `node scripts/mark-passing.js ${id} && ` : ''}git add -A && git commit -q -m "Feature ${id}: src/${id}.js and its test" && git log --oneline -n 3`,
      ),
    },
  ];
}

/** The lane's prompt for features `from`..`to` (1-based, inclusive). */
export function lanePrompt(from: number, to: number): string {
  return `${LANE_MARKER} Implement the features ${featureId(from)} to ${featureId(to)} of feature_list.json in order, each with its test: read docs/fNN.md, write src/fNN.js and test/fNN.test.js, make \`npm test\` pass, mark it passing (node scripts/mark-passing.js fNN) and commit it.`;
}

/**
 * The scripted agent of the scenario (one per server). The lane's turns are consumed in order — the
 * features `halves` name, each half ending with a text answer — so a compaction in between does not
 * change what comes next; a task's operation is answered by its feature and its step.
 */
export function continueScript(
  work: ContinueWork,
  halves: ReadonlyArray<readonly [number, number]>,
): (request: ScriptedRequest) => ScriptedTurn | undefined {
  const lane: ScriptedTurn[] = [];
  for (const [from, to] of halves) {
    for (let k = from; k <= to; k++)
      for (const [i, turn] of featureTurns(k, work, true).entries())
        lane.push({ text: turn.text, toolCalls: [{ id: `toolu_cw_${featureId(k)}_${i + 1}`, ...turn.call }] });
    lane.push({ text: `Done: ${featureId(from)} to ${featureId(to)} are implemented, tested and committed.` });
  }
  let next = 0;
  return (request) => {
    if (request.lastUserText.includes(COMPACTION_REQUEST_MARKER)) {
      const done = Math.floor(next / (FEATURE_TURNS + 1));
      return {
        text: `## Goal\nImplement the features of feature_list.json in order.\n## Progress\nAbout ${done} features done and committed; the tests pass.\n## Next step\nThe next feature not marked passing in feature_list.json.`,
      };
    }
    if (request.lastUserText.includes(SWITCH_PROBE)) return { text: 'Noted: the work stands as committed.' };
    const goal = firstUserText(request);
    if (goal.startsWith(FEATURE_HEADING)) return taskTurn(request, goal, work);
    return lane[next++];
  };
}

/** A coding task's feature operation: check the handoff against git, the nine turns, the handoff, a summary. */
function taskTurn(request: ScriptedRequest, goal: string, work: ContinueWork): ScriptedTurn {
  const id = /^id: (\S+)$/m.exec(goal)?.[1] ?? '';
  const k = featureNumber(id);
  if (!Number.isInteger(k)) return { text: `I do not know the feature "${id}".` };
  const step = request.body.messages.filter((m) => m.role === 'assistant').length;
  const ids = toolIds(goal, step, 'cw');
  const turns = featureTurns(k, work, false);
  if (step === 0)
    return {
      text: 'Checking the handoff against git first.',
      toolCalls: [{ id: ids(), name: 'bash', input: { command: 'git status --short && git log --oneline -n 5' } }],
    };
  const turn = turns[step - 1];
  if (turn) return { text: turn.text, toolCalls: [{ id: ids(), ...turn.call }] };
  if (step === turns.length + 1)
    return {
      text: `Rewriting the handoff for the next agent.`,
      toolCalls: [
        { id: ids(), name: 'write_file', input: { path: 'HANDOFF.md', content: handoff(work, k) } },
        {
          id: ids(),
          name: 'bash',
          input: { command: 'git add -A && git commit -q -m "Handoff after the feature" && git log --oneline -n 1' },
        },
      ],
    };
  return { text: `Implemented ${id} in src/${id}.js with its test; the handoff names the next feature.` };
}
