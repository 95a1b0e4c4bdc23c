/**
 * The hands' one way of calling the Docker engine: a failure becomes a `SandboxError` whose `kind`
 * drives the activity's retry classification (engine unreachable → `unavailable`, the rest →
 * `failed`), and HTTP statuses that mean "nothing to do" (a 404 on remove, a 304 on start) are
 * tolerated where the caller says so.
 */

export type SandboxErrorKind = 'unavailable' | 'image-missing' | 'invalid' | 'lost' | 'failed';

/** An infrastructure failure of the hands; `kind` drives the activity's retry classification. */
export class SandboxError extends Error {
  constructor(
    readonly kind: SandboxErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SandboxError';
  }
}

export function statusOf(err: unknown): number | undefined {
  const status = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

/** Maps a dockerode failure to a SandboxError; engine unreachable → `unavailable`. */
export function classifyDockerError(action: string, err: unknown): SandboxError {
  if (err instanceof SandboxError) return err;
  const status = statusOf(err);
  const code = (err as { code?: unknown } | null)?.code;
  const detail = err instanceof Error ? err.message : String(err);
  if (
    status === undefined ||
    status >= 500 ||
    code === 'ECONNREFUSED' ||
    code === 'ENOENT' ||
    code === 'ECONNRESET' ||
    code === 'EPIPE'
  ) {
    return new SandboxError('unavailable', `could not ${action}: the Docker engine did not answer (${detail})`, {
      cause: err,
    });
  }
  return new SandboxError('failed', `could not ${action}: ${detail}`, { cause: err });
}

/** Runs a Docker call; the listed HTTP statuses count as "nothing to do" and yield undefined. */
export async function dockerCall<T>(
  action: string,
  call: () => Promise<T>,
  tolerated: number[],
): Promise<T | undefined>;
export async function dockerCall<T>(action: string, call: () => Promise<T>): Promise<T>;
export async function dockerCall<T>(
  action: string,
  call: () => Promise<T>,
  tolerated: number[] = [],
): Promise<T | undefined> {
  try {
    return await call();
  } catch (err) {
    const status = statusOf(err);
    if (status !== undefined && tolerated.includes(status)) return undefined;
    throw classifyDockerError(action, err);
  }
}
