/**
 * A real Gitea for a test file (`platform/gitea.ts`, built by `npm run test:forge` before jest
 * starts): its own data folder and port, the harness's bot as an admin collaborator of a repository
 * holding `examples/textkit`, a reviewer who may write and a user who may only read, each with a
 * token, and the forge settings and secret store a worker gets from `AGENT_FORGES`.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseForges, type Forges } from '../../activities/forge/settings';
import { secretStore, type SecretStore } from '../../activities/secrets/store';
import { freePort } from '../../platform/dev-server';
import { ensureGitea, startGitea, type RunningGitea } from '../../platform/gitea';
import {
  giteaCollaborator,
  giteaLabel,
  giteaPushDirectory,
  giteaRepository,
  giteaUserWithToken,
  type GiteaAdmin,
  type GiteaRepository,
  waitForBranch,
} from '../../platform/gitea-admin';
import { PROJECT_ROOT } from '../../platform/paths';

const execFileAsync = promisify(execFile);

export const FORGE = 'local';
export const BOT = 'agent-bot';
export const REVIEWER = 'alice';
export const READER = 'mallory';
export const WEBHOOK_SECRET = 'webhook-secret-of-the-test-forge';

export interface TestForge {
  gitea: RunningGitea;
  admin: GiteaAdmin;
  botToken: string;
  reviewerToken: string;
  readerToken: string;
  /** `alice/textkit-<id>`, holding examples/textkit on `main`. */
  repo: GiteaRepository;
  forges: Forges;
  secrets: SecretStore;
  /** `AGENT_FORGES` and the secrets, for worker processes. */
  env: Record<string, string>;
  /** Calls the API as `token`'s user. */
  api<T = unknown>(token: string, method: string, apiPath: string, body?: unknown): Promise<T>;
  stop(): Promise<void>;
}

export interface TestForgeOptions {
  commentsPerHour?: number;
  logHosts?: string[];
  /** The forge's `tasks` defaults. */
  tasks?: Record<string, unknown>;
  /** Another source for the repository than examples/textkit. */
  source?: string;
}

export async function startTestForge(options: TestForgeOptions = {}): Promise<TestForge> {
  const binary = await ensureGitea();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'forge-test-'));
  const gitea = await startGitea(binary, { dir, port: await freePort() });
  const admin = { url: gitea.url, token: gitea.adminToken };
  const botToken = await giteaUserWithToken(admin, BOT);
  const reviewerToken = await giteaUserWithToken(admin, REVIEWER);
  const readerToken = await giteaUserWithToken(admin, READER);
  const repo = await giteaRepository(admin, REVIEWER, `textkit-${randomUUID().slice(0, 6)}`);
  await giteaCollaborator(admin, repo, BOT, 'admin');
  await giteaCollaborator(admin, repo, READER, 'read');
  await giteaLabel(admin, repo, 'agent');
  await giteaPushDirectory(repo, reviewerToken, options.source ?? path.join(PROJECT_ROOT, 'examples', 'textkit'), {
    message: 'textkit: upper',
  });
  const config = {
    [FORGE]: {
      kind: 'gitea',
      url: gitea.url,
      token: 'TEST_FORGE_TOKEN',
      webhookSecret: 'TEST_FORGE_WEBHOOK',
      ...(options.commentsPerHour ? { commentsPerHour: options.commentsPerHour } : {}),
      ...(options.logHosts ? { logHosts: options.logHosts } : {}),
      ...(options.tasks ? { tasks: options.tasks } : {}),
    },
  };
  const env = {
    AGENT_FORGES: JSON.stringify(config),
    AGENT_SECRET_TEST_FORGE_TOKEN: botToken,
    AGENT_SECRET_TEST_FORGE_WEBHOOK: WEBHOOK_SECRET,
  };
  return {
    gitea,
    admin,
    botToken,
    reviewerToken,
    readerToken,
    repo,
    forges: parseForges(env.AGENT_FORGES),
    secrets: secretStore(
      new Map([
        ['TEST_FORGE_TOKEN', botToken],
        ['TEST_FORGE_WEBHOOK', WEBHOOK_SECRET],
      ]),
    ),
    env,
    async api<T>(token: string, method: string, apiPath: string, body?: unknown): Promise<T> {
      const response = await fetch(`${gitea.apiUrl}${apiPath}`, {
        method,
        headers: { authorization: `token ${token}`, 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${method} ${apiPath}: ${response.status} ${text.slice(0, 300)}`);
      return (text ? JSON.parse(text) : undefined) as T;
    },
    async stop() {
      await gitea.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Pushes `files` as one commit on `branch` (made from `from`, default `main`); returns the commit. */
export async function pushChange(
  forge: TestForge,
  token: string,
  branch: string,
  files: Record<string, string>,
  options: { from?: string; message?: string } = {},
): Promise<string> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'forge-change-'));
  const helper = `!f() { test "$1" = get || exit 0; echo username=agent; echo "password=${token}"; }; f`;
  // Never blocking: a test's workers share this process's event loop.
  const git = async (...args: string[]) =>
    (
      await execFileAsync('git', ['-c', 'credential.helper=', '-c', `credential.helper=${helper}`, ...args], {
        cwd: work,
        env: { ...process.env, GIT_TERMINAL_PROMPT: '0', LANG: 'C' },
      })
    ).stdout.trim();
  try {
    await git('clone', '-q', '--branch', options.from ?? 'main', forge.repo.cloneUrl, '.');
    await git('checkout', '-q', '-B', branch);
    for (const [file, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(work, file)), { recursive: true });
      fs.writeFileSync(path.join(work, file), text);
    }
    await git('add', '-A');
    await git(
      '-c',
      'user.name=tester',
      '-c',
      'user.email=tester@forge.invalid',
      'commit',
      '-q',
      '-m',
      options.message ?? `change ${branch}`,
    );
    await git('push', '-q', 'origin', `HEAD:refs/heads/${branch}`);
    const commit = await git('rev-parse', 'HEAD');
    await waitForBranch(forge.repo, token, branch, commit);
    return commit;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/**
 * A coding task's result, waiting as long as a loaded machine needs; a task that does not end in
 * that time fails the test with where it stood (its phase, its operation, its report so far).
 */
export async function settledTask(
  client: import('@temporalio/client').Client,
  taskId: string,
  timeoutMs = 900_000,
): Promise<import('../../common/coding-task').CodingTaskResult> {
  const { taskStatusQuery } = await import('../../common/coding-task');
  const { codingTaskResult } = await import('../../client/task-result');
  const handle = client.workflow.getHandle(taskId);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const description = await handle.describe().catch(() => undefined);
    if (description && description.status.name !== 'RUNNING') return codingTaskResult(handle);
    if (Date.now() > deadline) {
      const status = await handle.query(taskStatusQuery).catch((err: Error) => err.message);
      throw new Error(
        `task ${taskId} did not end in ${timeoutMs} ms; it stood at: ${JSON.stringify(status).slice(0, 4000)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * `agent webhook serve`'s receiver in this process for a test's workers (the harness's client and
 * brain queue), subscribed to the test forge's repository by a signed Gitea webhook; `received`
 * collects its log lines.
 */
export async function receiveWebhooks(
  forge: TestForge,
  h: { temporal: { client: import('@temporalio/client').Client }; brainQueue: string },
  received: string[],
): Promise<import('../../workers/webhook-receiver').WebhookReceiver> {
  const { startWebhookReceiver } = await import('../../workers/webhook-receiver');
  const { giteaWebhook } = await import('../../platform/gitea-admin');
  const receiver = await startWebhookReceiver({
    client: h.temporal.client,
    taskQueue: h.brainQueue,
    forges: forge.forges,
    secrets: forge.secrets,
    port: 0,
    log: (line) => received.push(line),
  });
  await giteaWebhook(forge.admin, forge.repo, `${receiver.url}/webhooks/${FORGE}`, WEBHOOK_SECRET);
  return receiver;
}
