/**
 * `sendUntilAdmitted`: an Update request the server refused (FAILED_PRECONDITION, as while a workflow
 * task is being retried) is sent again with the same Update id; every other error reaches the caller at once.
 */
import { ServiceError } from '@temporalio/client';
import { isUpdateRefusedForNow, sendUntilAdmitted } from '../../client/update-admission';

/** The error shape the client raises for a gRPC status (`cause` carries `code`, `details`, `metadata`). */
function grpcError(code: number, details: string): ServiceError {
  const cause = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
  return new ServiceError('Update refused', { cause });
}

describe('sending an Update until it is admitted', () => {
  it('sends again after a refusal, once, and returns the answer', async () => {
    const refusal = grpcError(9, 'Unable to perform workflow execution update due to Workflow Task in failed state');
    expect(isUpdateRefusedForNow(refusal)).toBe(true);
    const ids: string[] = [];
    let told = 0;
    const answer = await sendUntilAdmitted(
      async (updateId) => {
        ids.push(updateId);
        if (ids.length < 3) throw refusal;
        return 'accepted';
      },
      { onRefused: () => (told += 1) },
    );
    expect(answer).toBe('accepted');
    expect(ids).toHaveLength(3);
    // One Update id for every attempt: a refused re-send may follow an admitted first send.
    expect(new Set(ids).size).toBe(1);
    expect(told).toBe(1);
  });

  it('uses the Update id it is given', async () => {
    expect(await sendUntilAdmitted(async (updateId) => updateId, { updateId: 'steer-1' })).toBe('steer-1');
  });

  it('passes any other error through without sending again', async () => {
    const notFound = grpcError(5, 'workflow not found');
    expect(isUpdateRefusedForNow(notFound)).toBe(false);
    let calls = 0;
    await expect(
      sendUntilAdmitted(async () => {
        calls += 1;
        throw notFound;
      }),
    ).rejects.toBe(notFound);
    expect(calls).toBe(1);
  });

  it('gives up with the refusal when the deadline passes', async () => {
    const refusal = grpcError(9, 'Workflow Task in failed state');
    await expect(
      sendUntilAdmitted(
        async () => {
          throw refusal;
        },
        { timeoutMs: 0 },
      ),
    ).rejects.toBe(refusal);
  });
});
