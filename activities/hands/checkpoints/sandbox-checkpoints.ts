/**
 * A session's checkpoints on its hands host (contract: `common/checkpoints.ts`).
 *
 * - `record` runs `checkpoint.sh` in the session's sandbox as the journal's writer. That root has
 *   no capability to read files it does not own, so the workspace is read by the script's other
 *   half as the agent (`checkpoint-read.sh`, uid 1000): a file the agent made private (mode 600) is
 *   still recorded. The repository lives on the journal volume, which the agent cannot write.
 * - `restore` makes a new session's volumes with the original workspace's environment, then fills
 *   the workspace in a short-lived container of the worker's own sandbox image (which has git,
 *   whatever image the workspace runs) that mounts the original journal read-only.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import type { RecordedCheckpoint, CheckpointOutcome, CheckpointWorkspaceInput } from '../../../common/checkpoints';
import { journalVolumeNameOf, SANDBOX_LABELS, volumeNameOf } from '../../../common/sandbox-names';
import { dockerCall, SandboxError } from '../docker-calls';
import { JOURNAL_DIR, JOURNAL_WRITER } from '../journal-store';
import type { SandboxCommands, ScriptResult } from '../sandbox-commands';
import type { SandboxLifecycle } from '../sandbox-lifecycle';
import { sandboxLabels, WORKSPACE_DIR } from '../sandbox-spec';

const load = (name: string): string => fs.readFileSync(path.join(__dirname, '..', 'scripts', name), 'utf8');
const SCRIPTS = {
  record: load('checkpoint.sh'),
  read: load('checkpoint-read.sh'),
  restore: load('restore-checkpoint.sh'),
};

/** Where the original journal is mounted in the restore container. */
const SOURCE_DIR = '/checkpoints';
/** Left out of every checkpoint: a quota workspace's file system has it at its root, readable by root only. */
export const ALWAYS_EXCLUDED = ['/lost+found/'];
/** Capabilities of the restore container: write the files, then give them to the agent. */
const RESTORE_CAPABILITIES = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER'];

export interface SandboxCheckpointsOptions {
  docker: Docker;
  lifecycle: SandboxLifecycle;
  commands: SandboxCommands;
  /** Extra labels on the volumes and containers made (as `SandboxLifecycleOptions.labels`). */
  labels?: Record<string, string>;
  /**
   * How long before the last full checkpoint started a change must have happened for the probe to
   * take it as recorded (`checkpoint.sh`; default 1000 ms): more than a file-time clock tick plus
   * the 50 ms of clock drift the probe tolerates.
   */
  probeMarginMs?: number;
}

/** What a restore found or did (the hands' activity adds where it happened). */
export type RestoreOutcome =
  | { kind: 'restored'; commit: string; files: number }
  | { kind: 'unknown-checkpoint' }
  /** The new session's workspace exists and another restore (or a session of its own) made it. */
  | { kind: 'workspace-exists'; owner: string | null };

export interface RestoreRequest {
  fromSessionId: string;
  commit: string;
  sessionId: string;
  /** Who makes the new workspace (its volumes' operation label): a retry of the same restore finds its own. */
  owner: string;
}

export class SandboxCheckpoints {
  private readonly docker: Docker;
  private readonly lifecycle: SandboxLifecycle;
  private readonly commands: SandboxCommands;
  private readonly labels: Record<string, string>;
  private readonly probeMarginUs: number;

  constructor(options: SandboxCheckpointsOptions) {
    this.probeMarginUs = Math.round((options.probeMarginMs ?? 1000) * 1000);
    this.docker = options.docker;
    this.lifecycle = options.lifecycle;
    this.commands = options.commands;
    this.labels = options.labels ?? {};
  }

  /**
   * Records the session's workspace (the container must be running); `skipped` when its image has
   * no git. `probe` (the default) first asks whether anything changed since the session's last full
   * checkpoint and, when nothing did, answers with that checkpoint's commit without running git
   * (the sandbox tools' `checkpoint-probe`, one process); `full` always reads the workspace
   * (`checkpoint.sh`).
   */
  async record(input: CheckpointWorkspaceInput, mode: 'probe' | 'full' = 'probe'): Promise<CheckpointOutcome> {
    const started = Date.now();
    const patterns = [...input.exclude, ...ALWAYS_EXCLUDED];
    const probed = mode === 'probe' ? await this.probe(input.sessionId, patterns) : undefined;
    const ref = `ops/${input.operationId.replace(/[^A-Za-z0-9_-]/g, '_')}/${input.kind}-${input.turn}`;
    const message = `${input.operationId} ${input.kind === 'base' ? 'before its first change, turn' : 'turn'} ${input.turn}`;
    const run =
      probed ??
      (await this.commands.script(input.sessionId, SCRIPTS.record, [SCRIPTS.read, ref, message, ...patterns], {
        user: JOURNAL_WRITER,
      }));
    const at = new Date().toISOString();
    const output = run.stdout.toString('utf8');
    const skipped = /^@@checkpoint-skipped (.*)$/m.exec(output);
    if (skipped) return { skipped: skipped[1]!, at };
    const header = /^@@checkpoint ([0-9a-f]{40}) ([0-9a-f]{40}|-) (\d+) (\d+)\n/m.exec(output);
    if (run.exitCode !== 0 || !header) {
      throw new SandboxError(
        'failed',
        `could not record a checkpoint (exit ${run.exitCode}): ${run.stderr.trim().slice(0, 500) || 'no output'}`,
      );
    }
    const changed = output
      .slice(header.index + header[0].length)
      .split('\0')
      .filter(Boolean);
    const unreadable = Number(header[4]);
    const checkpoint: RecordedCheckpoint = {
      commit: header[1]!,
      ...(header[2] !== '-' ? { parent: header[2] } : {}),
      filesChanged: Number(header[3]),
      changed,
      ...(unreadable > 0 ? { unreadable } : {}),
      at,
      ms: Date.now() - started,
    };
    return checkpoint;
  }

  /**
   * The probe's answer when the workspace is as the last full checkpoint left it (its output has
   * that checkpoint's header), else undefined: it changed, or the probe could not tell (a sandbox
   * tools binary without the probe answers with its usage and status 2).
   */
  private async probe(sessionId: string, patterns: string[]): Promise<ScriptResult | undefined> {
    const run = await this.commands.tool(sessionId, ['checkpoint-probe', String(this.probeMarginUs), ...patterns], {
      user: JOURNAL_WRITER,
    });
    return run.exitCode === 0 && run.stdout.toString('utf8').startsWith('@@checkpoint ') ? run : undefined;
  }

  /**
   * Makes `sessionId`'s workspace from `commit` of `fromSessionId`'s checkpoints: its volumes (with
   * the original workspace's environment), then the files. `onFilling` is called once the container
   * that writes them has started (a crash test's boundary).
   */
  async restore(request: RestoreRequest, onFilling: () => void = () => undefined): Promise<RestoreOutcome> {
    const owner = await this.workspaceOwner(request.sessionId);
    if (owner !== undefined && owner !== request.owner) return { kind: 'workspace-exists', owner };
    const environment = await this.lifecycle.workspaceEnvironment(request.fromSessionId);
    if (!environment) return { kind: 'unknown-checkpoint' };
    await this.lifecycle.assignEnvironment(request.sessionId, environment, { operationId: request.owner });
    const output = await this.runRestoreContainer(request, onFilling);
    if (/^@@unknown-checkpoint$/m.test(output)) return { kind: 'unknown-checkpoint' };
    const restored = /^@@restored (\{.*\})$/m.exec(output);
    if (!restored) throw new SandboxError('failed', `the restore did not finish: ${output.trim().slice(-500)}`);
    const record = JSON.parse(restored[1]!) as { commit: string; files: number };
    if (record.commit !== request.commit) return { kind: 'workspace-exists', owner: request.owner };
    return { kind: 'restored', commit: record.commit, files: record.files };
  }

  /** Who made the session's workspace volume (its operation label; null: none), or undefined when there is none. */
  async workspaceOwner(sessionId: string): Promise<string | null | undefined> {
    const volume = await dockerCall(
      'inspect a sandbox volume',
      () => this.docker.getVolume(volumeNameOf(sessionId, this.lifecycle.namePrefix)).inspect(),
      [404],
    );
    return volume ? (volume.Labels?.[SANDBOX_LABELS.operation] ?? null) : undefined;
  }

  /** Runs the restore script in its own container (one at a time per session: a leftover is removed first). */
  private async runRestoreContainer(input: RestoreRequest, onFilling: () => void): Promise<string> {
    const prefix = this.lifecycle.namePrefix;
    const name = `${prefix}restore-${input.sessionId}`;
    await dockerCall(
      'remove an earlier restore container',
      () => this.docker.getContainer(name).remove({ force: true }),
      [404, 409],
    );
    const container = await dockerCall('create the restore container', () =>
      this.docker.createContainer({
        name,
        Image: this.lifecycle.defaultImage,
        Cmd: ['bash', '-c', SCRIPTS.restore, 'restore-checkpoint', input.commit],
        User: '0:0',
        WorkingDir: '/',
        Labels: { ...sandboxLabels(this.labels, input.sessionId, input.owner), [SANDBOX_LABELS.role]: 'restore' },
        HostConfig: {
          NetworkMode: 'none',
          Mounts: [
            {
              Type: 'volume',
              Source: journalVolumeNameOf(input.fromSessionId, prefix),
              Target: SOURCE_DIR,
              ReadOnly: true,
            },
            { Type: 'volume', Source: volumeNameOf(input.sessionId, prefix), Target: WORKSPACE_DIR },
            { Type: 'volume', Source: journalVolumeNameOf(input.sessionId, prefix), Target: JOURNAL_DIR },
          ],
          CapDrop: ['ALL'],
          CapAdd: RESTORE_CAPABILITIES,
          SecurityOpt: ['no-new-privileges'],
        },
      }),
    );
    try {
      const chunks: Buffer[] = [];
      const sink = new PassThrough();
      sink.on('data', (chunk: Buffer) => chunks.push(chunk));
      const stream = await dockerCall('attach to the restore container', () =>
        container.attach({ stream: true, stdout: true, stderr: true }),
      );
      const ended = new Promise<void>((resolve) => stream.once('end', () => resolve()));
      this.docker.modem.demuxStream(stream, sink, sink);
      await dockerCall('start the restore container', () => container.start());
      onFilling();
      const exit = (await dockerCall('wait for the restore container', () => container.wait())) as {
        StatusCode?: number;
      };
      await ended;
      const output = Buffer.concat(chunks).toString('utf8');
      if (exit.StatusCode !== 0)
        throw new SandboxError('failed', `the restore failed (exit ${exit.StatusCode}): ${output.trim().slice(-500)}`);
      return output;
    } finally {
      await dockerCall('remove the restore container', () => container.remove({ force: true }), [404, 409]);
    }
  }
}
