/**
 * The operation's Updates: `steer` queues a message that joins the context at the next checkpoint
 * (at its tail, after the current tool batch: `OperationRun.enterSteering`); `abort` stops the loop, cancelling the activity in
 * flight. Both are accepted durably (the Update is in history before the caller hears "accepted")
 * and refused with a named reason once the operation has ended.
 */
import { setHandler } from '@temporalio/workflow';
import { abortUpdate, steerUpdate, TEXT_INPUT_MAX_BYTES } from '../../common/operation';
import { utf8Bytes } from '../../common/validation';
import { crashPoints } from '../shared/crash-point-sink';
import type { OperationRun } from './state';

export function acceptSteeringAndAbort(op: OperationRun, onAbort: () => void): void {
  setHandler(
    steerUpdate,
    ({ text }) => {
      const position = op.acceptSteering(text);
      crashPoints.reached('workflow: steering accepted');
      return { accepted: true, position };
    },
    {
      validator: (arg) => {
        if (typeof arg?.text !== 'string' || !arg.text.trim()) throw new Error('text: must be a non-empty string');
        if (utf8Bytes(arg.text) > TEXT_INPUT_MAX_BYTES)
          throw new Error(`text: must be at most ${TEXT_INPUT_MAX_BYTES} bytes (got ${utf8Bytes(arg.text)})`);
        if (op.ended || op.abortReason !== undefined) throw new Error('the operation is no longer running');
      },
    },
  );
  setHandler(
    abortUpdate,
    ({ reason }) => {
      op.acceptAbort(reason?.trim() || 'requested by user');
      crashPoints.reached('workflow: abort accepted');
      onAbort();
      return { accepted: true };
    },
    {
      validator: (arg) => {
        if (arg?.reason !== undefined && typeof arg.reason !== 'string') throw new Error('reason: must be a string');
        if (op.ended) throw new Error(`the operation has already ended (${op.ended.state})`);
      },
    },
  );
}
