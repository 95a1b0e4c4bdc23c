/**
 * `agent deploy status|set-current|ramp|delete`: rolling out a new build of the workflow code with
 * Worker Versioning (docs/production.md#rolling-out-new-workflow-code). Brain workers started with
 * `AGENT_WORKER_DEPLOYMENT` are versions of that deployment, each named by its build id (default: the
 * workflow bundle's hash); a new build gets work once it is ramped or made current, pinned workflows
 * finish on the build they started on, and a build with no running pinned work is drained.
 */
import type { Client } from '@temporalio/client';
import { connectClient } from '../client/connection';
import {
  deleteVersion,
  deploymentStatus,
  setCurrentVersion,
  setRampingVersion,
  type DeploymentStatus,
  type VersionStatus,
  ROUTING_WAIT_MS,
  type RoutingChange,
} from '../client/deployments';
import type { DeployCommand } from './command-types';
import { deploySettings } from './settings';

export async function deployCommand(command: DeployCommand): Promise<number> {
  const settings = deploySettings();
  const deployment = command.deployment ?? settings.deployment;
  if (!deployment)
    throw new Error(
      'which Worker Deployment? pass --deployment <name> or set AGENT_WORKER_DEPLOYMENT as the brain workers have it',
    );
  const { client, connection } = await connectClient(settings.temporal);
  try {
    return await run(client, deployment, command);
  } finally {
    await connection.close();
  }
}

async function run(client: Client, deployment: string, command: DeployCommand): Promise<number> {
  switch (command.kind) {
    case 'deploy-status': {
      const status = await deploymentStatus(client, deployment);
      console.log(command.json ? JSON.stringify(status, null, 2) : formatStatus(status));
      return 0;
    }
    case 'deploy-set-current': {
      const change = await setCurrentVersion(client, deployment, command.buildId, {
        allowNoPollers: command.allowNoPollers,
      });
      console.log(
        command.buildId === null
          ? `unversioned workers are current in ${deployment}: new workflows go to them; pinned ones stay on their builds`
          : `${command.buildId} is current in ${deployment}: new workflows start on it and auto-upgrade ones move to it at their next step; pinned ones finish on their builds (agent deploy status)`,
      );
      warnUnsettled(change, deployment);
      return 0;
    }
    case 'deploy-ramp':
      return ramp(client, deployment, command.buildId, command.percent);
    case 'deploy-delete':
      await deleteVersion(client, deployment, command.buildId);
      console.log(`${command.buildId} deleted from ${deployment}`);
      return 0;
  }
}

async function ramp(client: Client, deployment: string, buildId: string, percent: number): Promise<number> {
  if (percent === 0) {
    const { ramping } = await deploymentStatus(client, deployment);
    if (ramping && ramping.buildId !== buildId)
      throw new Error(`${buildId} is not ramping in ${deployment} (${ramping.buildId} is, at ${ramping.percent}%)`);
    const ended = await setRampingVersion(client, deployment, null, 0);
    console.log(`no build is ramping in ${deployment} any more`);
    warnUnsettled(ended, deployment);
    return 0;
  }
  const change = await setRampingVersion(client, deployment, buildId, percent);
  console.log(
    `${buildId} is ramping at ${percent}% in ${deployment}: that share of new workflows starts on it; agent deploy set-current ${buildId} when it is good`,
  );
  warnUnsettled(change, deployment);
  return 0;
}

/** A routing change the server made but had not yet taken to every task queue: said, not failed. */
function warnUnsettled(change: RoutingChange, deployment: string): void {
  if (change.settled) return;
  console.error(
    `warning: the server has not yet confirmed that every task queue of ${deployment} has this change ` +
      `(still propagating after ${ROUTING_WAIT_MS / 60_000} minutes); until it does, some new work may still start ` +
      `on the previous routing. agent deploy status says "routing change propagating" while it lasts.`,
  );
}

export function formatStatus(status: DeploymentStatus): string {
  if (!status.exists)
    return `no Worker Deployment ${status.deployment} yet: start brain workers with AGENT_WORKER_DEPLOYMENT=${status.deployment}`;
  const routing = [
    status.current ? `current ${status.current}` : 'no current build: new workflows go to unversioned workers',
    ...(status.ramping ? [`ramping ${status.ramping.buildId} at ${status.ramping.percent}%`] : []),
    ...(status.routingPropagating ? ['routing change propagating'] : []),
  ];
  return [`Worker Deployment ${status.deployment} · ${routing.join(' · ')}`, ...status.versions.map(versionLine)].join(
    '\n',
  );
}

function versionLine(version: VersionStatus): string {
  const state = version.rampPercent !== undefined ? `ramping ${version.rampPercent}%` : version.state;
  const pollers = version.queues.reduce((sum, queue) => sum + queue.pollers, 0);
  const workers = version.queues.length
    ? version.queues.map((queue) => `${queue.name} ${queue.pollers}`).join(', ')
    : 'none';
  const pinned = version.pinned
    ? `${version.pinned} pinned (${version.pinnedIds.join(', ')}${version.pinned > version.pinnedIds.length ? ', …' : ''})`
    : 'nothing pinned';
  const notes: string[] = [];
  if (version.pinned > 0 && pollers === 0)
    notes.push('✗ no worker of this build polls: its pinned workflows wait for one (agent doctor)');
  if (version.state === 'drained')
    notes.push(`drained: stop its workers, then agent deploy delete ${version.buildId} (five minutes after they stop)`);
  return [
    `  ${version.buildId}  ${state} · ${pinned} · ${version.autoUpgrade} auto-upgrade last ran here · workers polling: ${workers}`,
    ...notes.map((note) => `      ${note}`),
  ].join('\n');
}
