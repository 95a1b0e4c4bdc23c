/**
 * Which hands host this worker is, from the environment: `AGENT_HANDS_HOST` (default the machine's
 * hostname; its own task queue is `<AGENT_HANDS_QUEUE>@<host>`) and `AGENT_SANDBOX_PREFIX` (what its
 * container and volume names start with; default `agent-`).
 */
import * as os from 'node:os';
import { readPart, settingsPart, text, variable, type Environment } from '../common/env-settings';
import { HOST_NAME_PATTERN } from '../common/hands-route';
import { DEFAULT_NAME_PREFIX, NAME_PREFIX_PATTERN, NAME_PREFIX_RULE } from '../common/sandbox-names';

export interface HandsHost {
  host: string;
  namePrefix: string;
}

export const HANDS_HOST_PART = settingsPart({
  title: 'Hands host',
  intro:
    'Which Docker host a hands worker is: sessions are pinned to the host that holds their workspace (`workers/hands-host.ts`). Several hands workers on one Docker engine need different prefixes.',
  variables: {
    host: variable(
      'AGENT_HANDS_HOST',
      {
        description: "this hands worker's host name; its own queue is `<AGENT_HANDS_QUEUE>@<host>`",
        default: "the machine's hostname",
        values: '1–63 letters, digits, `.`, `_` or `-`, starting with a letter or digit',
      },
      text(undefined),
    ),
    namePrefix: variable(
      'AGENT_SANDBOX_PREFIX',
      {
        description:
          "what this host's container and volume names start with (`<prefix>sbx-<session>`, `<prefix>ws-<session>`, `<prefix>jr-<session>`)",
        default: `\`${DEFAULT_NAME_PREFIX}\``,
        values: NAME_PREFIX_RULE,
      },
      text(DEFAULT_NAME_PREFIX),
    ),
  },
  build: (values): HandsHost => {
    // The machine's hostname is checked like a host name given.
    const host = values.host ?? os.hostname().replace(/[^A-Za-z0-9_.-]/g, '-');
    const problems: string[] = [];
    if (!HOST_NAME_PATTERN.test(host))
      problems.push(
        `AGENT_HANDS_HOST: "${host}" must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit`,
      );
    if (!NAME_PREFIX_PATTERN.test(values.namePrefix))
      problems.push(`AGENT_SANDBOX_PREFIX: "${values.namePrefix}" must be ${NAME_PREFIX_RULE}`);
    if (problems.length) throw new Error(problems.join('; '));
    return { host, namePrefix: values.namePrefix };
  },
});

export function handsHostSettings(env: Environment): HandsHost {
  return readPart('hands host', HANDS_HOST_PART, env);
}
