/**
 * The one place hands errors become typed `ApplicationFailure`s (types: `HANDS_FAILURE_TYPES` in
 * `common/hands.ts`), at the activity boundary.
 */
import type { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { HANDS_FAILURE_TYPES, HANDS_NON_RETRYABLE_FAILURE_TYPES, type HandsFailureType } from '../../common/hands';
import { SandboxError, type SandboxErrorKind } from './docker-calls';

const BY_KIND: Record<SandboxErrorKind, HandsFailureType> = {
  unavailable: HANDS_FAILURE_TYPES.unavailable,
  'image-missing': HANDS_FAILURE_TYPES.imageMissing,
  invalid: HANDS_FAILURE_TYPES.invalidInput,
  lost: HANDS_FAILURE_TYPES.lost,
  failed: HANDS_FAILURE_TYPES.failed,
};

/** A typed hands failure; retryability follows `HANDS_NON_RETRYABLE_FAILURE_TYPES`. */
export function handsFailure(type: HandsFailureType, message: string, cause?: Error): ApplicationFailure {
  return ApplicationFailure.create({
    type,
    message,
    nonRetryable: HANDS_NON_RETRYABLE_FAILURE_TYPES.includes(type),
    ...(cause ? { cause } : {}),
  });
}

/** Classifies an error once, at the activity boundary. */
export function toActivityFailure(err: unknown): Error {
  if (err instanceof CancelledFailure || err instanceof ApplicationFailure) return err;
  if (err instanceof SandboxError) return handsFailure(BY_KIND[err.kind], err.message, err);
  const message = err instanceof Error ? err.message : String(err);
  return handsFailure(HANDS_FAILURE_TYPES.unexpected, message, err instanceof Error ? err : undefined);
}

/** Waits for the activity's cancellation to be confirmed, then throws it. */
export async function throwCancelled(ctx: Context | undefined): Promise<never> {
  if (ctx) await ctx.cancelled;
  throw new CancelledFailure('cancelled');
}
