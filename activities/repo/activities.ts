/**
 * The repo activities (contract: `common/repo.ts`), built by `createRepoActivities`: host-side git
 * and the harness's own work in a task's workspace. They run on the hands task queue, beside the
 * sandbox they work in; each is a named function in its own module. Every one heartbeats while it
 * runs, so a dead hands worker is noticed within the preset's heartbeat timeout.
 */
import type { RepoActivities } from '../../common/repo';
import { currentActivity, Heartbeat } from '../heartbeat';
import { checkWorkspace } from './check-workspace';
import { commitAccepted } from './commit-accepted';
import { repoContext, type RepoActivitiesDeps, type RepoContext } from './deps';
import { prepareRepository } from './prepare';
import { pushBranch } from './push';
import { readFeatureList, readRevisionReplies, releaseHostRepository, shelveAttempt, writeReport } from './records';
import { seedBranch } from './seed-branch';
import { workspaceSnapshot } from './snapshot';
import { verifyWorkspace } from './verify';

export type { RepoActivitiesDeps } from './deps';

export function createRepoActivities(deps: RepoActivitiesDeps): RepoActivities {
  const ctx = repoContext(deps);
  const beating =
    <I, O>(name: string, fn: (ctx: RepoContext, input: I) => Promise<O>) =>
    async (input: I): Promise<O> => {
      const heartbeat = new Heartbeat(currentActivity(), ctx.heartbeatEveryMs, { activity: name });
      try {
        return await fn(ctx, input);
      } finally {
        heartbeat.stop();
      }
    };
  return {
    prepareRepository: beating('prepareRepository', prepareRepository),
    seedBranch: beating('seedBranch', seedBranch),
    workspaceSnapshot: beating('workspaceSnapshot', workspaceSnapshot),
    checkWorkspace: beating('checkWorkspace', checkWorkspace),
    verifyWorkspace: beating('verifyWorkspace', verifyWorkspace),
    commitAccepted: beating('commitAccepted', commitAccepted),
    pushBranch: beating('pushBranch', pushBranch),
    shelveAttempt: beating('shelveAttempt', shelveAttempt),
    writeReport: beating('writeReport', writeReport),
    readFeatureList: beating('readFeatureList', readFeatureList),
    readRevisionReplies: beating('readRevisionReplies', readRevisionReplies),
    releaseHostRepository: beating('releaseHostRepository', releaseHostRepository),
  };
}
