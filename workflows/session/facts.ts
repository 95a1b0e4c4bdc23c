/**
 * Global facts: session-level metadata, last write wins (`setFact`; each write stays in the history
 * as its Update). A write reaches every lane at its tail, never by rewriting a context: open
 * operations get it as a signal and take it at their next checkpoint; idle lanes get it with their
 * next operation.
 */
import { ApplicationFailure, getExternalWorkflowHandle, setHandler } from '@temporalio/workflow';
import { sessionFactSignal } from '../../common/lanes';
import { factProblem, SESSION_FAILURE_TYPES, setFactUpdate } from '../../common/session';
import { crashPoints } from '../shared/crash-point-sink';
import { nowIso, type SessionRun } from './state';
import { showSessionDetails } from './visibility';

export function acceptFacts(s: SessionRun): void {
  setHandler(
    setFactUpdate,
    ({ key, value }) => {
      const previous = s.carry.facts[key]?.value;
      const seq = (s.carry.factSeq += 1);
      s.carry.facts[key] = { value, seq, at: nowIso() };
      crashPoints.reached('session: fact set');
      for (const lane of Object.values(s.carry.lanes)) {
        if (!lane.open) continue;
        const seen = lane.factsSeen;
        lane.factsSeen = seq;
        getExternalWorkflowHandle(lane.open)
          .signal(sessionFactSignal, { key, value, seq })
          // The operation ended first: its lane's next operation gets the fact instead.
          .catch(() => void (lane.factsSeen = Math.min(lane.factsSeen, seen)));
      }
      showSessionDetails(s);
      return { key, seq, ...(previous !== undefined ? { previous } : {}) };
    },
    {
      validator: (input) => {
        const problem = factProblem(input?.key, input?.value);
        if (problem) {
          throw ApplicationFailure.create({
            type: SESSION_FAILURE_TYPES.invalidFact,
            message: `invalid fact: ${problem}`,
            nonRetryable: true,
          });
        }
      },
    },
  );
}
