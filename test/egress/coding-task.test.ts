/**
 * A coding task whose init.sh runs `npm ci` (one small dependency from the npm registry the host is
 * configured with) through the hands worker's egress proxy: it installs under the coding-task
 * default `registries`, and fails with the egress refusal the model can read under `none`. Real
 * Temporal, real Docker, the scripted agent over the real SDK; the proxy runs in the hands worker.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { EgressPolicyInput } from '../../common/egress';
import type { OperationResult } from '../../common/operation';
import { git, startTaskHarness, taskResult, type TaskHarness } from '../support/coding-task';
import { fetchCommand, hostAddress, NPM_PROJECT, startStandIn, type StandInServer } from '../support/egress';

const TOKEN = `reg-${randomUUID()}`;
// The hands worker of this file reads its secret store from the environment when it starts.
process.env.AGENT_SECRET_REG_TOKEN = TOKEN;

/** Installs deps/ from the registry, checks they load, then asks the private registry for a package. */
const initScript = (registryUrl: string) => `#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")/deps"
npm ci --no-audit --no-fund --fetch-retries=0
node -e "require('is-number')" && echo "dependencies installed"
${fetchCommand(registryUrl)}
`;

describe('a coding task whose init.sh runs npm ci', () => {
  let h: TaskHarness;
  let registry: StandInServer;
  const ip = hostAddress();
  beforeAll(async () => {
    registry = await startStandIn('private-registry', ip, TOKEN);
    h = await startTaskHarness({ initScript: initScript(`http://${ip}:${registry.port}/pkg`) });
    // The repository gets a package with one dependency (deps/package.json and its lock file).
    const work = path.join(h.dir, 'with-deps');
    git(h.dir, 'clone', '-q', h.remote.bare, work);
    fs.mkdirSync(path.join(work, 'deps'));
    for (const [file, text] of Object.entries(NPM_PROJECT)) fs.writeFileSync(path.join(work, 'deps', file), text);
    git(work, 'add', '-A');
    git(work, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-q', '-m', 'deps');
    git(work, 'push', '-q', 'origin', 'main');
  });
  afterAll(async () => {
    await h?.close();
    await registry?.close();
    delete process.env.AGENT_SECRET_REG_TOKEN;
  });

  /** Runs a task of one feature; returns its initializer's result and what the model read back from init.sh. */
  async function runTask(branch: string, egress?: EgressPolicyInput) {
    const from = h.model.requests.length;
    const handle = await h.start({
      branch,
      specPath: 'SPEC.md',
      verify: 'npm test',
      budget: { featuresPerRun: 1 },
      ...(egress ? { egress } : {}),
    });
    const result = await taskResult(handle);
    const initializer = result.ledger.find((entry) => entry.kind === 'initializer')!;
    const operation = (await h.temporal.client.workflow.getHandle(initializer.operationId).result()) as OperationResult;
    const histories = await Promise.all(
      [handle.workflowId, ...result.ledger.map((entry) => entry.operationId)].map(async (id) =>
        historyText(await h.temporal.client.workflow.getHandle(id).fetchHistory()),
      ),
    );
    return {
      result,
      operation,
      histories,
      initRun: initScriptResult(h.model.requests.slice(from).map((r) => r.body)),
    };
  }

  /** A history as text, every payload decoded (they hold JSON). */
  function historyText(history: unknown): string {
    return JSON.stringify(history, (key, value: unknown) => {
      // Payload bytes arrive base64-encoded (proto JSON) or as byte arrays.
      if (key === 'data' && typeof value === 'string') return Buffer.from(value, 'base64').toString('utf8');
      // ArrayBuffer.isView: the SDK's byte arrays come from another realm than the test's.
      if (ArrayBuffer.isView(value))
        return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('utf8');
      const buffer = value as { type?: string; data?: number[] } | null;
      if (buffer?.type === 'Buffer' && Array.isArray(buffer.data)) return Buffer.from(buffer.data).toString('utf8');
      return value;
    });
  }

  /** The tool result of the call that ran ./init.sh, as the model read it. */
  function initScriptResult(bodies: unknown[]): string {
    type Block = { type: string; id?: string; tool_use_id?: string; input?: { command?: string }; content?: unknown };
    for (const body of bodies) {
      const messages = (body as { messages?: Array<{ content: string | Block[] }> }).messages ?? [];
      const blocks = messages.flatMap((m) => (typeof m.content === 'string' ? [] : m.content));
      const call = blocks.find((b) => b.type === 'tool_use' && b.input?.command?.includes('./init.sh'));
      const result = call && blocks.find((b) => b.type === 'tool_result' && b.tool_use_id === call.id);
      if (result) return typeof result.content === 'string' ? result.content : JSON.stringify(result.content);
    }
    return '';
  }

  it('installs the dependency under the default registries policy', async () => {
    const { result, operation, initRun } = await runTask('agent/egress-registries');
    expect(result.state).toBe('completed');
    expect(initRun).toContain('dependencies installed');
    expect(operation.egress?.hosts['registry.npmjs.org']?.allowed).toBeGreaterThan(0);
    expect(operation.egress?.hosts['registry.npmjs.org']?.denied).toBe(0);
    // The private registry is not in this policy: refused by name.
    expect(initRun).toContain(
      `[egress refused: egress to ${ip}:${registry.port} is not allowed by this task's policy (registries)`,
    );
  });

  it('fails with the egress error under none', async () => {
    const { operation, initRun } = await runTask('agent/egress-none', 'none');
    expect(initRun).not.toContain('dependencies installed');
    expect(initRun).toContain(
      "[egress refused: egress to registry.npmjs.org is not allowed by this task's policy (none): no host is allowed]",
    );
    expect(operation.egress).toMatchObject({ allowed: 0, hosts: { 'registry.npmjs.org': { allowed: 0 } } });
  });

  it('reaches a private registry with the token the proxy adds; no history holds it', async () => {
    const entry = `${ip}:${registry.port}`;
    const { result, histories, initRun } = await runTask('agent/egress-private', {
      allow: [entry],
      registries: true,
      credentials: { [entry]: { header: 'Authorization', scheme: 'Bearer', secret: 'REG_TOKEN', upstream: 'http' } },
    });
    expect(result.state).toBe('completed');
    expect(initRun).toContain('dependencies installed');
    expect(initRun).toContain('200 private-registry');
    expect(registry.seen).toContain('GET /pkg authorized');
    const b64 = Buffer.from(TOKEN).toString('base64').replace(/=+$/, '');
    // The decoded histories do hold the tool outputs (so a token in them would be found).
    expect(histories.some((history) => history.includes('200 private-registry'))).toBe(true);
    for (const history of histories) {
      expect(history).not.toContain(TOKEN);
      expect(history).not.toContain(b64);
    }
    expect(JSON.stringify(h.model.requests.map((r) => r.rawBody))).not.toContain(TOKEN);
  });
});
