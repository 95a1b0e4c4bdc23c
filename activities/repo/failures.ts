/**
 * The one place repo errors become typed `ApplicationFailure`s (types: `REPO_FAILURE_TYPES` in
 * `common/repo.ts`), at the activity boundary. Sandbox failures keep their hands types.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { REPO_NON_RETRYABLE_FAILURE_TYPES, type RepoFailureType } from '../../common/repo';
import { toActivityFailure } from '../hands/failures';

export function repoFailure(type: RepoFailureType, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: REPO_NON_RETRYABLE_FAILURE_TYPES.includes(type) });
}

export function toRepoFailure(err: unknown): Error {
  if (err instanceof ApplicationFailure || err instanceof CancelledFailure) return err;
  return toActivityFailure(err);
}
