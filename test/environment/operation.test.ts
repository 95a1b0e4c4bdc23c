/**
 * An operation's workspace gets its repository's environment (real Temporal, Docker, the scripted
 * model through the Anthropic SDK): a devcontainer.json whose Dockerfile is `FROM agent-sandbox`
 * plus a Debian package, and whose postCreateCommand uses it, is what the agent's commands run in;
 * the result and the details say where the environment came from; an environment that cannot be
 * made ends the operation failed, naming why, without the model being asked to fix it.
 */
import { operationResult } from '../../client/operation-result';
import { OperationHarness, startOperationHarness } from '../support/operation-harness';
import { removeRepositories, writeRepository } from '../support/repositories';

/** Under the home directory: a root the hands worker allows by default. */
const repo = (files: Record<string, string>) => writeRepository(files, { underHome: true });

jest.setTimeout(600_000);

let h: OperationHarness;
beforeAll(async () => {
  h = await startOperationHarness();
});
afterAll(async () => {
  await h.close();
  removeRepositories();
});

it("runs the agent's commands in the repository's devcontainer, set up by its postCreateCommand", async () => {
  const dir = repo({
    '.devcontainer/devcontainer.json': JSON.stringify({
      build: { dockerfile: 'Dockerfile' },
      postCreateCommand: 'jq -n \'{tool: "jq"}\' > .made-by-post-create.json',
      forwardPorts: [8080],
    }),
    '.devcontainer/Dockerfile':
      'FROM agent-sandbox\nRUN apt-get update && apt-get install -y --no-install-recommends jq && rm -rf /var/lib/apt/lists/*\n',
    'README.md': '# a repository with its own container\n',
  });
  h.model.setScript([
    { toolCalls: [{ name: 'bash', input: { command: 'jq -r .tool .made-by-post-create.json && jq --version' } }] },
    { respond: (request) => ({ text: `ran: ${request.toolResults[0]?.content.trim()}` }) },
  ]);
  const sessionId = `envop-${Date.now().toString(36)}`;
  h.removeOnClose(sessionId);
  const handle = await h.start({ goal: 'show the tools', repo: { kind: 'local', path: dir }, sessionId });
  const result = await operationResult(handle);
  expect(result.state).toBe('completed');
  expect(result.finalText).toMatch(/^ran: jq\njq-1\.\d+/);
  expect(result.environment).toMatchObject({
    source: 'devcontainer',
    files: ['.devcontainer/devcontainer.json', '.devcontainer/Dockerfile'],
    unsupported: ['forwardPorts'],
    image: expect.stringMatching(/^agent-env:/),
  });
  // What the Web UI shows as the operation's details (kept in its memo at the end).
  const details = String((await handle.describe()).memo?.details ?? '');
  expect(details).toMatch(/environment: devcontainer \(image agent-env:[0-9a-f]{16}, (built|reused)\)/);
});

it('ends the operation failed, naming the definition, when the environment cannot be made', async () => {
  const dir = repo({ '.devcontainer/devcontainer.json': '{ "image": "agent-sandbox", "postCreateCommand": 3 }' });
  h.model.setScript([
    { toolCalls: [{ name: 'bash', input: { command: 'echo never runs' } }] },
    { text: 'the model is not asked again' },
  ]);
  const requestsBefore = h.model.requests.filter((r) => r.status === 200).length;
  const sessionId = `envbad-${Date.now().toString(36)}`;
  h.removeOnClose(sessionId);
  const handle = await h.start({ goal: 'try', repo: { kind: 'local', path: dir }, sessionId });
  const result = await operationResult(handle);
  expect(result.state).toBe('failed');
  expect(result.reason).toMatch(
    /^preparing the environment failed: EnvironmentInvalid: \.devcontainer\/devcontainer\.json: postCreateCommand: must be a command/,
  );
  // One model request: the tool call that needed the workspace; none after the failure.
  expect(h.model.requests.filter((r) => r.status === 200).length - requestsBefore).toBe(1);
});
