/**
 * The forge activities (contract: `common/forge.ts`), on the brain's queue: short API calls that
 * need no workspace. Each resolves the forge its input names from `AGENT_FORGES` and its token from
 * the host's secret store; a forge or secret that is not there fails at once, naming what to set.
 */
import { Context } from '@temporalio/activity';
import { FORGE_FAILURE_TYPES, type ForgeActivities, type ForgeRepository } from '../../common/forge';
import type { SecretStore } from '../secrets/store';
import { ForgeClient } from './client';
import { forgeFailure } from './http';
import type { Forges, ForgeSettings } from './settings';

export interface ForgeActivitiesDeps {
  forges: Forges;
  secrets: SecretStore;
  fetch?: typeof fetch;
  /** The Temporal Web UI's page of workflows, for links in pull requests and comments. */
  workflowsUrl?: string;
  /** The deployment's hands queue (`AGENT_HANDS_QUEUE`): where a forge's tasks run unless its `tasks` say otherwise. */
  handsTaskQueue?: string;
}

/** The settings of the forge `name`, or a failure that says how to configure it. */
export function forgeOf(forges: Forges, name: string): ForgeSettings {
  const forge = forges.get(name);
  if (forge) return forge;
  throw forgeFailure(
    FORGE_FAILURE_TYPES.notConfigured,
    `the forge ${JSON.stringify(name)} is not configured on this worker (AGENT_FORGES names ${[...forges.keys()].join(', ') || 'none'})`,
  );
}

/** The forge's API token from the secret store. */
export function forgeToken(forge: ForgeSettings, secrets: SecretStore): string {
  const token = secrets.get(forge.tokenSecret);
  if (token) return token;
  throw forgeFailure(
    FORGE_FAILURE_TYPES.notConfigured,
    `the forge ${forge.name} names the secret ${forge.tokenSecret} for its token, which the secret store does not hold (set AGENT_SECRET_${forge.tokenSecret})`,
  );
}

export function createForgeActivities(deps: ForgeActivitiesDeps): ForgeActivities {
  const client = (repo: Pick<ForgeRepository, 'forge'>): ForgeClient => {
    const forge = forgeOf(deps.forges, repo.forge);
    let signal: AbortSignal | undefined;
    try {
      signal = Context.current().cancellationSignal;
    } catch {
      signal = undefined;
    }
    return new ForgeClient({
      forge,
      token: forgeToken(forge, deps.secrets),
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
      ...(signal ? { signal } : {}),
    });
  };
  // Async all through: a forge or secret that is missing rejects the call, never throws past it.
  const call =
    <I extends Pick<ForgeRepository, 'forge'>, O>(fn: (forge: ForgeClient, input: I) => Promise<O>) =>
    async (input: I): Promise<O> =>
      fn(client(input), input);
  return {
    upsertPullRequest: call((forge, input) => forge.upsertPullRequest(input)),
    readPullRequest: call((forge, input) => forge.readPullRequest(input)),
    updatePullRequestSection: call((forge, input) => forge.updatePullRequestSection(input)),
    postComment: call((forge, input) => forge.postComment(input)),
    readChecks: call((forge, input) => forge.readChecks(input)),
    readIssue: call((forge, input) => forge.readIssue(input, input.number)),
    setLabels: call(async (forge, input) => ({ labels: await forge.setLabels(input) })),
    userPermission: call((forge, input) => forge.userPermission(input, input.user)),
    checkBranch: call((forge, input) => forge.checkBranch(input)),
    findPullRequestByHead: call(async (forge, input) => {
      const number = await forge.findPullRequestByHead(input, input.sha);
      return number === undefined ? {} : { number };
    }),
    pollRepository: call((forge, input) => forge.pollRepository(input)),
    forgeTaskSettings: async (input) => {
      const forge = forgeOf(deps.forges, input.forge);
      return {
        label: forge.label,
        tasks: { ...(deps.handsTaskQueue ? { handsTaskQueue: deps.handsTaskQueue } : {}), ...forge.tasks },
        webUrl: forge.url,
        ...(deps.workflowsUrl ? { workflowsUrl: deps.workflowsUrl } : {}),
      };
    },
  };
}
