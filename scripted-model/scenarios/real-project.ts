/**
 * The scripted agent of a coding task on a real third-party project (a package's sources fetched
 * from its registry), for the environment tests: nothing in the repository describes its
 * environment, so the harness must detect and build one before `init.sh` can install anything.
 *  - the initializer: looks around, writes a one-feature feature list, `init.sh` (the project's own
 *    way of installing its dependencies), HANDOFF.md and a .gitignore for build output, runs
 *    `init.sh` and commits;
 *  - the coding agent: writes the feature's files, runs `init.sh` and the project's whole test
 *    suite, commits.
 * Turns are chosen by the number of assistant messages, tool-use ids derived from the goal (as in
 * `coding-task.ts`), so a retried request gets the same answer.
 */
import type { ScriptedRequest, ScriptedTurn } from '../script';
import { call, FEATURE_HEADING, firstUserText, INITIALIZER_HEADING, toolIds } from './coding-task';

export interface RealProject {
  /** For messages and commits (`six 1.16.0 from PyPI`). */
  name: string;
  /** `init.sh`: installs the dependencies and builds; run by the agent with the registries reachable. */
  init: string;
  /** The project's whole test suite (also the task's `verify`). */
  test: string;
  /** What build output the repository must not commit (`.venv/`, `target/`). */
  ignore: string[];
  feature: {
    id: string;
    description: string;
    steps: string[];
    /** The feature's own check. */
    verify: string;
    /** The files that implement it, with their tests. */
    files: Record<string, string>;
  };
}

export function realProjectScenario(project: RealProject) {
  return (request: ScriptedRequest): ScriptedTurn | undefined => {
    const goal = firstUserText(request);
    const step = request.body.messages.filter((m) => m.role === 'assistant').length;
    const ids = toolIds(goal, step, 'rp');
    if (goal.startsWith(INITIALIZER_HEADING)) return initializerTurn(project, step, ids);
    if (goal.startsWith(FEATURE_HEADING)) return featureTurn(project, step, ids);
    return undefined;
  };
}

function handoff(project: RealProject, done: boolean): string {
  return [
    '# Handoff',
    '',
    '## Goal',
    `Add ${project.feature.id} to ${project.name}.`,
    '',
    '## Completed',
    done ? `- ${project.feature.id}` : '- feature_list.json, init.sh, this handoff',
    '',
    '## Remaining',
    done ? '- nothing' : `- ${project.feature.id}`,
    '',
    '## Tests',
    `- \`${project.test}\``,
    '',
    '## Next Step',
    done ? '- none' : `- Implement ${project.feature.id}.`,
    '',
  ].join('\n');
}

function initializerTurn(project: RealProject, step: number, ids: () => string): ScriptedTurn {
  const { feature } = project;
  switch (step) {
    case 0:
      return {
        text: `Looking at ${project.name}.`,
        toolCalls: [call(ids, 'bash', { command: 'ls -a && git log --oneline -n 3' })],
      };
    case 1: {
      const list = [
        {
          id: feature.id,
          category: 'feature',
          description: feature.description,
          steps: feature.steps,
          verify: feature.verify,
          passes: false,
        },
      ];
      return {
        text: 'Writing the feature list, init.sh, the handoff and .gitignore.',
        toolCalls: [
          call(ids, 'write_file', { path: 'feature_list.json', content: `${JSON.stringify(list, null, 2)}\n` }),
          call(ids, 'write_file', { path: 'init.sh', content: project.init }),
          call(ids, 'write_file', { path: 'HANDOFF.md', content: handoff(project, false) }),
          call(ids, 'bash', {
            command: `printf '%s\\n' ${project.ignore.map((p) => `'${p}'`).join(' ')} >> .gitignore`,
          }),
        ],
      };
    }
    case 2:
      return {
        text: 'Running init.sh and committing.',
        toolCalls: [
          call(ids, 'bash', {
            command:
              'chmod +x init.sh && ./init.sh 2>&1 | tail -n 5 && git add -A && git commit -q -m "Feature list, init.sh and handoff" && git log --oneline -n 1',
            timeout_ms: 1_200_000,
          }),
        ],
      };
    default:
      return { respond: (req) => ({ text: `Initialized. init.sh said:\n${req.toolResults[0]?.content ?? ''}` }) };
  }
}

function featureTurn(project: RealProject, step: number, ids: () => string): ScriptedTurn {
  const { feature } = project;
  switch (step) {
    case 0:
      return {
        text: 'Checking the handoff against git.',
        toolCalls: [call(ids, 'bash', { command: 'git status --short && cat HANDOFF.md' })],
      };
    case 1:
      return {
        text: `Implementing ${feature.id}.`,
        toolCalls: [
          ...Object.entries(feature.files).map(([file, content]) => call(ids, 'write_file', { path: file, content })),
          call(ids, 'write_file', { path: 'HANDOFF.md', content: handoff(project, true) }),
        ],
      };
    case 2:
      return {
        text: 'Running init.sh and the whole test suite, then committing.',
        toolCalls: [
          call(ids, 'bash', {
            command: `./init.sh > /tmp/init.log 2>&1 || { tail -n 20 /tmp/init.log; exit 1; }; ${project.test} 2>&1 | tail -n 5; git add -A && git commit -q -m "Add ${feature.id}" && git log --oneline -n 1`,
            timeout_ms: 1_200_000,
          }),
        ],
      };
    default:
      return {
        respond: (req) => ({
          text: `Implemented ${feature.id}. The tests said:\n${req.toolResults[0]?.content ?? ''}`,
        }),
      };
  }
}
