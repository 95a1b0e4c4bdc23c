/**
 * Which hands host this worker is, from the environment: `AGENT_HANDS_HOST` (default the machine's
 * hostname; its own task queue is `<AGENT_HANDS_QUEUE>@<host>`) and `AGENT_SANDBOX_PREFIX` (what its
 * container and volume names start with; default `agent-`).
 */
import * as os from 'node:os';
import { HOST_NAME_PATTERN } from '../common/hands-route';
import { DEFAULT_NAME_PREFIX, NAME_PREFIX_PATTERN, NAME_PREFIX_RULE } from '../common/sandbox-names';

export function handsHostSettings(env: NodeJS.ProcessEnv = process.env): { host: string; namePrefix: string } {
  const host = env.AGENT_HANDS_HOST || os.hostname().replace(/[^A-Za-z0-9_.-]/g, '-');
  if (!HOST_NAME_PATTERN.test(host))
    throw new Error(
      `AGENT_HANDS_HOST: "${host}" must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  const namePrefix = env.AGENT_SANDBOX_PREFIX || DEFAULT_NAME_PREFIX;
  if (!NAME_PREFIX_PATTERN.test(namePrefix))
    throw new Error(`AGENT_SANDBOX_PREFIX: "${namePrefix}" must be ${NAME_PREFIX_RULE}`);
  return { host, namePrefix };
}
