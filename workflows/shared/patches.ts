/**
 * `patched()` for the pinned workflow types, with the patches their code already had folded into
 * one marker.
 *
 * Each id a run asks `patched()` about for the first time writes a marker event and an upsert of
 * `TemporalChangeVersion` listing every id so far: an operation's run wrote 9 of each, 18 events and
 * about 3 KB (a tenth of a 10-step operation's history, 0.9 events per step at 20 steps). A run that
 * starts on this code writes one marker instead, the newest fold's `marker` (`PATCH_FOLDS`), as its
 * first command (`foldPatches()`, at the start of the type's workflow function); it stands for every
 * id in the fold's `ids`, so such a run takes none of their old branches and writes none of their
 * markers. A history recorded before has no fold marker: `patched(marker)` is false while it replays,
 * the run's answer is kept for the rest of it, and each id is read from its own marker as before —
 * after the run has caught up too, exactly as the code of its start would have.
 *
 * Only pinned types fold: on a versioned deployment nothing but their own build replays them. An
 * AutoUpgrade run can be moved back to an older build (a rollback), which knows each id but not the
 * fold, so those types keep `patched()`. On an unversioned deployment an older worker cannot replay a
 * run recorded by this code — as with any new patch: its workflow task fails and is retried until a
 * worker with this code takes it.
 *
 * The list is closed: a history with the marker was recorded by code that had exactly these
 * patches. A later patch is an `isPatched(id)` with a marker of its own; a later fold takes a new marker and lists the
 * ids of this one too (`isPatched` asks the newest fold first).
 *
 * Module state is per run: the workflow bundle evaluates every module but `common/preloaded` again
 * for each run a worker loads (`workers/workflow-bundle.ts`), and a replay recomputes it.
 */
import { patched, workflowInfo } from '@temporalio/workflow';
import { DEFAULT_VERSIONING_BEHAVIOUR, WORKFLOW_VERSIONING } from '../../common/versioning';

export interface PatchFold {
  /** The marker a new run writes for all of `ids`. */
  marker: string;
  ids: readonly string[];
}

/** The folds, newest first. */
export const PATCH_FOLDS: readonly PatchFold[] = [
  {
    marker: 'patches-folded-2026-12',
    ids: [
      'deadline-timer',
      'stuck-watchdog-clock-free',
      'stuck-watchdog-awake',
      'parallel-safe-tool-batch',
      'hooks',
      'stuck-detection',
      'context-compaction',
      'compaction-stuck-watch',
      'seed-check-after-first-model-reply',
      'hands-routing',
      'workspace-environment',
      'check-seed-source-before-first-model-call',
      'counters-every-10-turns',
      'ops-visibility',
      'stop-reasons',
      'checkpoints',
      'checkpoint-with-tool-call',
      'task-workspace-environment',
      'task-hands-routing',
      'task-stuck-detection',
    ],
  },
];

/** The fold this run started with (none for a run recorded before it, or of an AutoUpgrade type). */
let runFold: PatchFold | undefined;

/**
 * Called first in a pinned type's workflow function: a new run writes the newest fold's marker as its
 * first command, a replay finds it there; a history without it keeps each id's own marker.
 */
export function foldPatches(): void {
  const type = workflowInfo().workflowType;
  const behaviour = WORKFLOW_VERSIONING[type]?.behaviour ?? DEFAULT_VERSIONING_BEHAVIOUR;
  if (behaviour !== 'PINNED') return;
  runFold = PATCH_FOLDS.find((fold) => patched(fold.marker));
}

/** `patched(id)`, true without a marker of its own when the run's fold lists `id`. */
export function isPatched(id: string): boolean {
  return runFold?.ids.includes(id) === true || patched(id);
}
