/**
 * The environment activities' one error class, turned into an ApplicationFailure at the activity
 * boundary (`toEnvironmentFailure`): definitions that are wrong and steps that fail are not retried;
 * Docker and network trouble is.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ENVIRONMENT_FAILURES } from '../../common/environment';
import { toActivityFailure } from '../hands/failures';

export type EnvironmentErrorKind = 'invalid' | 'build-failed' | 'setup-failed';

export class EnvironmentError extends Error {
  constructor(
    readonly kind: EnvironmentErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'EnvironmentError';
  }
}

export function toEnvironmentFailure(err: unknown): Error {
  if (err instanceof EnvironmentError) {
    const type =
      err.kind === 'invalid'
        ? ENVIRONMENT_FAILURES.invalid
        : err.kind === 'build-failed'
          ? ENVIRONMENT_FAILURES.buildFailed
          : ENVIRONMENT_FAILURES.setupFailed;
    return ApplicationFailure.create({ type, message: err.message, nonRetryable: true });
  }
  return toActivityFailure(err);
}
