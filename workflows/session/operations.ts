/**
 * What the session hears from its operations: a `task` call forked a subagent lane (and later, how
 * its operation ended), and an abort was accepted (the lane's queued follow-ups are cancelled, and
 * further prompts for it are refused until the operation has ended).
 */
import { setHandler } from '@temporalio/workflow';
import { forkEndedSignal, laneForkedSignal, operationAbortingSignal } from '../../common/lanes';
import { cancelQueue } from './lanes';
import { addIndexEntry, indexEntry, laneOf, nowIso, type SessionRun } from './state';
import { releaseLeasesOf } from './sandbox';
import { showSessionDetails } from './visibility';

export function listenToOperations(s: SessionRun): void {
  setHandler(laneForkedSignal, (fork) => {
    if (indexEntry(s, fork.operationId)) return;
    const parentLane = s.carry.lanes[fork.parentLane];
    const lane = laneOf(s, fork.lane);
    Object.assign(lane, {
      open: fork.operationId,
      operations: lane.operations + 1,
      factsSeen: s.carry.factSeq,
      forkedFrom: { lane: fork.parentLane, operationId: fork.parentOperationId, toolCallId: fork.toolCallId },
      root: parentLane?.root ?? s.running.get(fork.parentOperationId)?.root ?? fork.parentOperationId,
    });
    addIndexEntry(s, {
      operationId: fork.operationId,
      lane: fork.lane,
      prompt: fork.description.slice(0, 200),
      state: 'running',
      acceptedAt: nowIso(),
      parentOperationId: fork.parentOperationId,
    });
    showSessionDetails(s);
  });
  setHandler(forkEndedSignal, ({ operationId, state, reason }) => {
    const entry = indexEntry(s, operationId);
    if (entry) Object.assign(entry, { state, reason, endedAt: nowIso() });
    const lane = Object.values(s.carry.lanes).find((candidate) => candidate.open === operationId);
    if (lane) {
      lane.open = undefined;
      lane.last = { operationId, state, reason };
    }
    releaseLeasesOf(s, operationId);
    showSessionDetails(s);
  });
  setHandler(operationAbortingSignal, ({ operationId, reason }) => {
    const lane = Object.values(s.carry.lanes).find((candidate) => candidate.open === operationId);
    if (!lane) return;
    lane.aborting = true;
    cancelQueue(s, lane, `lane ${lane.name}'s operation ${operationId} was aborted (${reason})`);
    showSessionDetails(s);
  });
}
