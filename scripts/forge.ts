/**
 * `npm run forge [-- start|stop|status|build|repo]`: a local Gitea for pull requests on this machine
 * (`platform/gitea.ts`): built from its Go module the first time, started headless on
 * 127.0.0.1:<AGENT_FORGE_PORT> with its data under `<AGENT_DATA_DIR>/forge/`.
 *
 * `start` also makes the harness's bot user (`agent-bot`), its token and a webhook secret once, and
 * writes them with the matching `AGENT_FORGES` into `<AGENT_DATA_DIR>/forge/agent.env` (mode 600):
 * `set -a; . .data/forge/agent.env; set +a` gives a worker and `agent webhook serve` the forge `local`.
 *
 * `repo <owner/name> [--from <dir>] [--webhook <url>]`: a repository with the bot as an admin
 * collaborator, the `agent` label, the files of `<dir>` as its first commit, and a signed webhook.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runMain } from '../client/main';
import {
  ensureGitea,
  giteaAnswers,
  GITEA_VERSION,
  localForgeLayout,
  localForgePid,
  prepareGitea,
  startGitea,
  stopLocalForge,
} from '../platform/gitea';
import {
  giteaCollaborator,
  giteaLabel,
  giteaPushDirectory,
  giteaRepository,
  giteaUserWithToken,
  giteaWebhook,
  type GiteaAdmin,
} from '../platform/gitea-admin';
import { forgeServerSettings } from '../platform/settings';

const BOT = 'agent-bot';
const FORGE_NAME = 'local';
/** The secrets `agent.env` defines (`AGENT_SECRET_<NAME>` each) and `AGENT_FORGES` names. */
const TOKEN_SECRET = 'LOCAL_FORGE_TOKEN';
const WEBHOOK_SECRET = 'LOCAL_FORGE_WEBHOOK_SECRET';
const secretVariable = (name: string) => `AGENT_SECRET_${name}`;

function envFile(dir: string): string {
  return path.join(dir, 'agent.env');
}

function readEnvFile(file: string): Record<string, string> {
  if (!fs.existsSync(file)) return {};
  const values: Record<string, string> = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const match = /^([A-Z0-9_]+)=(.*)$/.exec(line);
    if (match) values[match[1]!] = match[2]!.replace(/^'(.*)'$/, '$1');
  }
  return values;
}

/** The bot, its token, a webhook secret and `AGENT_FORGES`, made once into `agent.env`. */
async function ensureBot(admin: GiteaAdmin, dir: string): Promise<Record<string, string>> {
  const file = envFile(dir);
  const existing = readEnvFile(file);
  if (existing[secretVariable(TOKEN_SECRET)]) return existing;
  const token = await giteaUserWithToken(admin, BOT);
  const forges = {
    [FORGE_NAME]: {
      kind: 'gitea',
      url: admin.url,
      token: TOKEN_SECRET,
      webhookSecret: WEBHOOK_SECRET,
      label: 'agent',
    },
  };
  const values = {
    AGENT_FORGES: JSON.stringify(forges),
    [secretVariable(TOKEN_SECRET)]: token,
    [secretVariable(WEBHOOK_SECRET)]: randomBytes(24).toString('hex'),
  };
  fs.writeFileSync(
    file,
    `${Object.entries(values)
      .map(([key, value]) => `${key}='${value}'`)
      .join('\n')}\n`,
    { mode: 0o600 },
  );
  return values;
}

function option(args: string[], name: string): string | undefined {
  const index = args.indexOf(name);
  if (index < 0) return undefined;
  const value = args[index + 1];
  if (!value || value.startsWith('--')) throw new Error(`${name} needs a value`);
  return value;
}

runMain(async (args) => {
  const command = args[0] ?? 'start';
  const layout = localForgeLayout(forgeServerSettings().port);
  const url = `http://127.0.0.1:${layout.port}`;
  const log = (line: string) => console.log(line);
  switch (command) {
    case 'build': {
      const built = await ensureGitea(GITEA_VERSION, log);
      console.log(`Gitea ${built.version}: ${built.binary}`);
      return 0;
    }
    case 'start': {
      const binary = await ensureGitea(GITEA_VERSION, log);
      if (!(localForgePid(layout) && (await giteaAnswers(url)))) {
        await startGitea(binary, layout, { detached: true });
      }
      const { adminToken } = await prepareGitea(binary, layout);
      await ensureBot({ url, token: adminToken }, layout.dir);
      console.log(
        `Gitea ${binary.version} on ${url} (admin agent-admin; its token in ${path.join(layout.dir, 'admin-token')})`,
      );
      console.log(
        `the forge "${FORGE_NAME}" for the workers and agent webhook serve: set -a; . ${envFile(layout.dir)}; set +a`,
      );
      return 0;
    }
    case 'stop':
      console.log(
        (await stopLocalForge(layout)) ? 'the forge is stopped (its data stays)' : 'the forge was not running',
      );
      return 0;
    case 'status': {
      const pid = localForgePid(layout);
      const answers = await giteaAnswers(url);
      console.log(`Gitea on ${url}: ${answers ? 'serving' : 'not serving'}${pid ? ` (pid ${pid})` : ''}`);
      return answers ? 0 : 1;
    }
    case 'repo': {
      const fullName = args[1];
      if (!fullName || !/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(fullName))
        throw new Error(
          'repo needs "owner/name": npm run forge -- repo alice/textkit [--from <dir>] [--webhook <url>]',
        );
      const binary = await ensureGitea(GITEA_VERSION, log);
      const { adminToken } = await prepareGitea(binary, layout);
      const admin = { url, token: adminToken };
      const env = await ensureBot(admin, layout.dir);
      const [owner, name] = fullName.split('/') as [string, string];
      if (owner !== 'agent-admin') await giteaUserWithToken(admin, owner);
      const repo = await giteaRepository(admin, owner, name);
      await giteaCollaborator(admin, repo, BOT, 'admin');
      await giteaLabel(admin, repo, 'agent');
      const from = option(args, '--from');
      if (from) await giteaPushDirectory(repo, adminToken, path.resolve(from));
      const webhook = option(args, '--webhook');
      if (webhook) await giteaWebhook(admin, repo, webhook, env[secretVariable(WEBHOOK_SECRET)]!);
      console.log(
        `${url}/${fullName}: ${BOT} is an admin collaborator, label "agent"${from ? `, ${from} pushed` : ''}${webhook ? `, webhook to ${webhook}` : ''}`,
      );
      return 0;
    }
    default:
      throw new Error(`unknown command "${command}": use start, stop, status, build or repo`);
  }
});
