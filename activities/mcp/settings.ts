/**
 * The brain worker's MCP settings, from its environment. A stdio MCP server is a program the brain
 * worker runs on its own host, so whoever can start a workflow must not choose any program:
 * `AGENT_MCP_COMMANDS` lists the commands an input's `command` may name (exactly as written,
 * `:`-separated, e.g. `npx:/usr/local/bin/github-mcp`), or `*` for any. Default: none.
 */
export interface McpHostSettings {
  allowedCommands: ReadonlySet<string> | 'any';
}

export function readMcpSettings(env: NodeJS.ProcessEnv = process.env): McpHostSettings {
  const raw = (env.AGENT_MCP_COMMANDS ?? '').trim();
  if (raw === '*') return { allowedCommands: 'any' };
  return {
    allowedCommands: new Set(
      raw
        .split(':')
        .map((entry) => entry.trim())
        .filter(Boolean),
    ),
  };
}
