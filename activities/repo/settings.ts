/**
 * The coding tasks' host-side settings from the environment — where the host keeps its clones, the
 * harness's commit identity, and an https credential for private remotes — declared as settings
 * (`common/env-settings.ts`; the configuration page is generated from them).
 */
import * as path from 'node:path';
import { parsed, settingsPart, text, variable } from '../../common/env-settings';

export interface GitAuthor {
  name: string;
  email: string;
}

export const DEFAULT_GIT_AUTHOR: GitAuthor = { name: 'coding agent', email: 'agent@harness.invalid' };

/** `Name <email>` → its parts. */
export function parseAuthor(value: string): GitAuthor {
  const match = /^\s*([^<>]+?)\s*<([^<>\s]+)>\s*$/.exec(value);
  if (!match) throw new Error(`${JSON.stringify(value)} is not "Name <email>"`);
  return { name: match[1]!, email: match[2]! };
}

export interface RepoSettings {
  /** Where the host keeps one bare clone per task run. */
  tasksDir: string;
  author: GitAuthor;
}

/** The coding tasks' settings; `defaults.tasksDir` applies without `AGENT_TASKS_DIR`. */
export function repoPart(defaults: { tasksDir: string }) {
  return settingsPart({
    title: 'Coding tasks',
    intro:
      "The hands worker's side of overnight coding tasks (`activities/repo/`): the host clones and pushes, with the host's own credentials — its git credential helpers and ssh keys, or the token below — which never reach the sandbox, the input or the history.",
    variables: {
      tasksDir: variable(
        'AGENT_TASKS_DIR',
        {
          description: "where the host keeps a run's clone (`<dir>/<session>/repo.git`) until everything is pushed",
          default: '`<AGENT_DATA_DIR>/tasks`',
          values: 'a directory',
        },
        parsed(
          (value) => path.resolve(value),
          () => defaults.tasksDir,
        ),
      ),
      author: variable(
        'AGENT_GIT_AUTHOR',
        {
          description: "author and committer of the harness's commits",
          default: `\`${DEFAULT_GIT_AUTHOR.name} <${DEFAULT_GIT_AUTHOR.email}>\``,
          values: '`Name <email>`',
        },
        parsed(parseAuthor, () => DEFAULT_GIT_AUTHOR),
      ),
      token: variable(
        'AGENT_GIT_TOKEN',
        {
          description:
            'a token offered to https remotes through a credential helper that reads it from the environment (never on a command line or in a message)',
          default: "none: the host's credential helpers and ssh keys",
        },
        text(undefined),
      ),
      username: variable(
        'AGENT_GIT_USERNAME',
        { description: 'the user name sent with `AGENT_GIT_TOKEN`', default: '`x-access-token`' },
        text('x-access-token'),
      ),
    },
    build: ({ tasksDir, author }): RepoSettings => ({ tasksDir, author }),
  });
}
