/**
 * The scripted agent of an overnight coding task on `examples/textkit` (SPEC.md: the commands
 * `slug`, `words` and `title`). It plays both roles the harness asks for, recognised by the first
 * line of the operation's goal (`common/task-prompts.ts`):
 *  - the initializer: reads the spec, writes feature_list.json, init.sh and HANDOFF.md, commits;
 *  - the coding agent: checks the handoff against git, implements the feature named by the goal's
 *    `id:` line (module, test, handoff), runs the tests and commits.
 *
 * Turns are chosen by the number of assistant messages in the request and tool-use ids are derived
 * from the goal, so a retried request gets the same answer and ids never repeat across operations.
 * Options make the coding agent misbehave (for the harness's integrity tests) or wait before it
 * commits (for crash tests).
 */
import type { ScriptedRequest, ScriptedToolCall, ScriptedTurn } from '../script';

export const INITIALIZER_HEADING = '# Initialize a long-running coding task';
export const FEATURE_HEADING = '# Implement one feature of a long-running coding task';

/** Misbehaviours of the coding agent. */
export type Cheat =
  /** Sets `passes: true` on every feature in feature_list.json. */
  | 'flip-passes'
  | 'delete-feature-list'
  /** Rewords another feature and weakens every `verify` to `true`. */
  | 'reword-features'
  /** Makes `npm test` always succeed (package.json's test script becomes `exit 0`). */
  | 'edit-test-script'
  /** After committing, `git reset --hard` to the repository's first commit (before the run). */
  | 'reset-hard'
  /** Writes an implementation that does not work. */
  | 'broken';

export interface CodingTaskScenarioOptions {
  /** Misbehaviour by feature id and attempt (1-based). */
  cheats?: Record<string, Record<number, Cheat[]>>;
  /** Before committing this feature, wait until `/tmp/release-<id>` exists in the sandbox. */
  holdBeforeCommit?: string;
  /** The initializer writes a feature list that does not match the schema. */
  malformedFeatureList?: boolean;
  /** The init.sh the initializer writes (and runs) instead of the default one. */
  initScript?: string;
}

interface FeatureScript {
  description: string;
  verify: string;
  steps: string[];
  module: string;
  broken: string;
  test: string;
}

const textkitHelper = `const textkit = (...args) =>
  execFileSync(process.execPath, [path.join(__dirname, '..', 'bin', 'textkit.js'), ...args], { encoding: 'utf8' }).trim();`;

const testFile = (cases: string): string =>
  `'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { execFileSync } = require('node:child_process');
const path = require('node:path');

${textkitHelper}

${cases}
`;

export const TEXTKIT_FEATURES: Record<string, FeatureScript> = {
  slug: {
    description: '`textkit slug <text>` prints a URL slug of the text',
    steps: ['Run `node bin/textkit.js slug "Hello, World!  Again"`', 'It prints `hello-world-again`'],
    verify: `test "$(node bin/textkit.js slug 'Hello, World!  Again')" = hello-world-again`,
    module: `'use strict';
/** \`textkit slug <text>\`: lower case, runs of other characters become one '-', none at the ends. */
module.exports = (text) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
`,
    broken: `'use strict';
module.exports = (text) => text.toLowerCase();
`,
    test: testFile(
      `test('slug makes a URL slug', () => {
  assert.strictEqual(textkit('slug', 'Hello, World!  Again'), 'hello-world-again');
});`,
    ),
  },
  words: {
    description: '`textkit words <text>` prints the number of words in the text',
    steps: ['Run `node bin/textkit.js words "one two  three"`', 'It prints `3`'],
    verify: `test "$(node bin/textkit.js words 'one two  three')" = 3`,
    module: `'use strict';
/** \`textkit words <text>\`: the number of runs of non-space characters. */
module.exports = (text) => String(text.split(/\\s+/).filter(Boolean).length);
`,
    broken: `'use strict';
module.exports = (text) => String(text.length);
`,
    test: testFile(
      `test('words counts the words', () => {
  assert.strictEqual(textkit('words', 'one two  three'), '3');
});`,
    ),
  },
  title: {
    description: '`textkit title <text>` prints the text with every word capitalised',
    steps: ['Run `node bin/textkit.js title "the quick brown fox"`', 'It prints `The Quick Brown Fox`'],
    verify: `test "$(node bin/textkit.js title 'the quick brown fox')" = 'The Quick Brown Fox'`,
    module: `'use strict';
/** \`textkit title <text>\`: every word's first letter in capitals, the rest unchanged. */
module.exports = (text) => text.replace(/\\S+/g, (word) => word[0].toUpperCase() + word.slice(1));
`,
    broken: `'use strict';
module.exports = (text) => text;
`,
    test: testFile(
      `test('title capitalises every word', () => {
  assert.strictEqual(textkit('title', 'the quick brown fox'), 'The Quick Brown Fox');
});`,
    ),
  },
};

export const FEATURE_LIST = Object.entries(TEXTKIT_FEATURES).map(([id, f]) => ({
  id,
  category: 'command',
  description: f.description,
  steps: f.steps,
  verify: f.verify,
  passes: false,
}));

export const INIT_SCRIPT = `#!/usr/bin/env bash
# Sets up and checks textkit: there are no dependencies to install; the tests are the smoke check.
set -euo pipefail
cd "$(dirname "$0")"
node --version
npm test --silent
`;

const handoff = (completed: string[], remaining: string[], next: string): string => `# Handoff

## Goal
Add the slug, words and title commands to textkit (SPEC.md), one feature per session.

## Completed
${completed.map((line) => `- ${line}`).join('\n')}

## Remaining
${remaining.length ? remaining.map((id) => `- ${id}`).join('\n') : '- nothing'}

## Changed Files
- see \`git log\`

## Decisions
- One module per command in src/commands/<name>.js, its tests in test/<name>.test.js.

## Tests
- \`npm test\` (Node's test runner over test/)

## Known Problems
- none

## Next Step
- ${next}

## Verification
- The harness runs each feature's verify command from feature_list.json and \`npm test\`.
`;

/** The script function for a coding task's operations; use with `startScriptedModelServer({ script })`. */
export function codingTaskScenario(options: CodingTaskScenarioOptions = {}) {
  return (request: ScriptedRequest): ScriptedTurn | undefined => {
    const goal = firstUserText(request);
    const step = request.body.messages.filter((m) => m.role === 'assistant').length;
    const ids = toolIds(goal, step);
    if (goal.startsWith(INITIALIZER_HEADING)) return initializerTurn(step, ids, options);
    if (goal.startsWith(FEATURE_HEADING)) {
      const id = /^id: (\S+)$/m.exec(goal)?.[1] ?? '';
      const attempt = Number(/^attempt (\d+) of \d+$/m.exec(goal)?.[1] ?? '1');
      const feature = TEXTKIT_FEATURES[id];
      if (!feature) return { text: `I do not know how to implement the feature "${id}".` };
      return featureTurn(step, ids, id, feature, options.cheats?.[id]?.[attempt] ?? [], options.holdBeforeCommit);
    }
    return undefined;
  };
}

function initializerTurn(step: number, ids: () => string, options: CodingTaskScenarioOptions): ScriptedTurn {
  switch (step) {
    case 0:
      return {
        text: 'Reading the repository and the specification.',
        toolCalls: [call(ids, 'bash', { command: 'ls -a && cat SPEC.md && git log --oneline -n 5' })],
      };
    case 1: {
      const list = options.malformedFeatureList ? [{ id: 'slug', description: 'slug command' }] : FEATURE_LIST;
      return {
        text: 'Writing the feature list, init.sh and the handoff.',
        toolCalls: [
          call(ids, 'write_file', { path: 'feature_list.json', content: `${JSON.stringify(list, null, 2)}\n` }),
          call(ids, 'write_file', { path: 'init.sh', content: options.initScript ?? INIT_SCRIPT }),
          call(ids, 'write_file', {
            path: 'HANDOFF.md',
            content: handoff(
              ['feature_list.json (3 features), init.sh, this handoff'],
              Object.keys(TEXTKIT_FEATURES),
              'Implement `slug`.',
            ),
          }),
        ],
      };
    }
    case 2:
      return {
        text: 'Checking init.sh and committing.',
        toolCalls: [
          call(ids, 'bash', {
            command:
              'chmod +x init.sh && ./init.sh 2>&1 | tail -n 3 && git add -A && git commit -q -m "Feature list, init.sh and handoff for SPEC.md" && git log --oneline -n 1',
          }),
        ],
      };
    default:
      return { text: 'The feature list has 3 features (slug, words, title); init.sh runs the tests.' };
  }
}

function featureTurn(
  step: number,
  ids: () => string,
  id: string,
  feature: FeatureScript,
  cheats: Cheat[],
  hold: string | undefined,
): ScriptedTurn {
  const remaining = Object.keys(TEXTKIT_FEATURES).filter((other) => other !== id);
  switch (step) {
    case 0:
      return {
        text: 'Checking the handoff against git first.',
        toolCalls: [call(ids, 'bash', { command: 'git status --short && git log --oneline -n 5 && cat HANDOFF.md' })],
      };
    case 1:
      return {
        text: `Implementing \`${id}\`: the module, its test and the handoff.`,
        toolCalls: [
          call(ids, 'write_file', {
            path: `src/commands/${id}.js`,
            content: cheats.includes('broken') ? feature.broken : feature.module,
          }),
          call(ids, 'write_file', { path: `test/${id}.test.js`, content: feature.test }),
          call(ids, 'write_file', {
            path: 'HANDOFF.md',
            content: handoff([`${id} (this session)`], remaining, `Implement the next feature that does not pass yet.`),
          }),
          ...cheats.flatMap((cheat) => cheatCalls(ids, cheat)),
        ],
      };
    case 2: {
      const wait = hold === id ? `while [ ! -f /tmp/release-${id} ]; do sleep 0.2; done; ` : '';
      const reset = cheats.includes('reset-hard')
        ? ' && git reset -q --hard "$(git rev-list --max-parents=0 HEAD)"'
        : '';
      return {
        text: 'Running the tests and committing.',
        toolCalls: [
          call(ids, 'bash', {
            command: `echo ${id} >> /workspace/.agent/commit-effects.log; ${wait}npm test 2>&1 | grep -E '^# (pass|fail)'; git add -A && git commit -q -m "Add the ${id} command" && git log --oneline -n 1${reset}`,
            timeout_ms: 600_000,
          }),
        ],
      };
    }
    default:
      return {
        respond: (request) => ({
          text: `Implemented \`${id}\` in src/commands/${id}.js with a test. Last command printed:\n${request.toolResults[0]?.content ?? '(nothing)'}`,
        }),
      };
  }
}

function cheatCalls(ids: () => string, cheat: Cheat): ScriptedToolCall[] {
  const editJson = (file: string, body: string) =>
    call(ids, 'bash', {
      command: `node -e "const fs=require('fs');const j=JSON.parse(fs.readFileSync('${file}','utf8'));${body};fs.writeFileSync('${file}',JSON.stringify(j,null,2))"`,
    });
  switch (cheat) {
    case 'flip-passes':
      return [editJson('feature_list.json', 'for(const f of j)f.passes=true')];
    case 'delete-feature-list':
      return [call(ids, 'bash', { command: 'rm -f feature_list.json' })];
    case 'reword-features':
      return [
        editJson('feature_list.json', "j[j.length-1].description='done already';for(const f of j)f.verify='true'"),
      ];
    case 'edit-test-script':
      return [editJson('package.json', "j.scripts.test='exit 0'")];
    default:
      return [];
  }
}

export function call(ids: () => string, name: string, input: Record<string, unknown>): ScriptedToolCall {
  return { id: ids(), name, input };
}

export function firstUserText(request: ScriptedRequest): string {
  const first = request.body.messages[0];
  if (!first) return '';
  if (typeof first.content === 'string') return first.content;
  return (first.content as Array<{ type: string; text?: string }>)
    .filter((block) => block.type === 'text')
    .map((block) => block.text ?? '')
    .join('\n');
}

/** Tool-use ids unique to the operation (a hash of its goal) and the step; `tag` tells scenarios apart. */
export function toolIds(goal: string, step: number, tag = 'ct'): () => string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < goal.length; i++) hash = Math.imul(hash ^ goal.charCodeAt(i), 0x01000193) >>> 0;
  let n = 0;
  return () => `toolu_${tag}${hash.toString(16).padStart(8, '0')}_${step}_${++n}`;
}

/** The default script, for `npm run scripted-model -- --port N --script scripted-model/scenarios/coding-task.ts`. */
export default codingTaskScenario();
