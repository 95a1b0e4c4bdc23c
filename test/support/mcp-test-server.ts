/**
 * A small stdio MCP server for the tests (`@modelcontextprotocol/sdk`), started by the brain worker
 * as `node --import tsx test/support/mcp-test-server.ts [--fail-at-start]`:
 *  - `add_note {text, tags?}` appends a line to `$NOTES_FILE` (so a test counts how often it ran);
 *  - `search_notes {query}` (read-only) returns the matching lines;
 *  - `token_check {}` says which token it received in `$SERVICE_TOKEN` (its SHA-256, and the
 *    token itself, which the harness must mask before recording it);
 *  - `hang {}` never answers.
 * With `--fail-at-start` it writes an error to stderr and exits before `initialize`.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

if (process.argv.includes('--fail-at-start')) {
  process.stderr.write('notes server: cannot open database /nonexistent/notes.db\n');
  process.exit(3);
}

const notesFile = process.env.NOTES_FILE;
const server = new McpServer({ name: 'notes', version: '1.0.0' });

server.registerTool(
  'add_note',
  {
    description: 'Add a note.',
    inputSchema: { text: z.string().min(1), tags: z.array(z.string()).optional() },
  },
  async ({ text, tags }) => {
    if (notesFile) fs.appendFileSync(notesFile, `${text}${tags?.length ? ` #${tags.join(' #')}` : ''}\n`);
    return { content: [{ type: 'text', text: `noted: ${text}` }] };
  },
);

server.registerTool(
  'search_notes',
  {
    description: 'Search the notes.',
    inputSchema: { query: z.string() },
    annotations: { readOnlyHint: true },
  },
  async ({ query }) => {
    const lines = notesFile && fs.existsSync(notesFile) ? fs.readFileSync(notesFile, 'utf8').split('\n') : [];
    const found = lines.filter((line) => line && line.includes(query));
    return { content: [{ type: 'text', text: found.length ? found.join('\n') : 'no notes match' }] };
  },
);

server.registerTool('token_check', { description: 'Report the service token received.' }, async () => {
  const token = process.env.SERVICE_TOKEN ?? '';
  const sha = createHash('sha256').update(token).digest('hex');
  return { content: [{ type: 'text', text: `token sha256 ${sha}; token ${token}` }] };
});

server.registerTool('hang', { description: 'Never answers.' }, () => new Promise<never>(() => undefined));

void server.connect(new StdioServerTransport());
