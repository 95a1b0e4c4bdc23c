/**
 * Sessions for tests: the operation harness (scripted model, brain and hands workers on unique
 * queues, real Temporal and Docker) plus prompts submitted through Update-with-Start, and clean-up
 * of every session it made (workflow terminated, container and volume removed).
 */
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { acceptedOperationResult } from '../../client/operation-result';
import { readSession, sessionHandle, submitPrompt } from '../../client/session';
import type { OperationResult } from '../../common/operation';
import type { PromptAccepted, PromptInput, SessionInput, SessionStatus } from '../../common/session';
import type { ModelScript } from '../../scripted-model/script';
import { startOperationHarness, type OperationHarness } from './operation-harness';

export interface SessionHarness {
  h: OperationHarness;
  /** A fresh session id (registered for clean-up). */
  newSession(prefix?: string): string;
  submit(sessionId: string, prompt: PromptInput | string, session?: SessionInput): Promise<PromptAccepted>;
  status(sessionId: string): Promise<SessionStatus>;
  operation(operationId: string): WorkflowHandle;
  /** Waits for the operation to exist and end; its result. */
  result(operationId: string): Promise<OperationResult>;
  close(): Promise<void>;
}

export async function startSessionHarness(
  script: ModelScript = [],
  options: { temporalAddress?: string } = {},
): Promise<SessionHarness> {
  return startSessionHarnessOn(await startOperationHarness(script, options), { closeHarness: true });
}

/** Sessions on an operation harness that is already running (closing them leaves it running unless asked). */
export function startSessionHarnessOn(h: OperationHarness, options: { closeHarness?: boolean } = {}): SessionHarness {
  const sessions: string[] = [];
  const harness: SessionHarness = {
    h,
    newSession(prefix = 'sess') {
      const id = `${prefix}-${randomUUID().slice(0, 8)}`;
      sessions.push(id);
      h.removeOnClose(id);
      return id;
    },
    submit(sessionId, prompt, session) {
      return submitPrompt(h.temporal.client, {
        sessionId,
        prompt: typeof prompt === 'string' ? { prompt } : prompt,
        session: { handsTaskQueue: h.handsQueue, ...session },
        taskQueue: h.brainQueue,
      });
    },
    status: (sessionId) => readSession(h.temporal.client, sessionId),
    operation: (operationId) => h.temporal.client.workflow.getHandle(operationId),
    result: (operationId) => acceptedOperationResult(h.temporal.client, operationId),
    async close() {
      for (const id of sessions) {
        await sessionHandle(h.temporal.client, id)
          .terminate('test finished')
          .catch(() => undefined);
      }
      if (options.closeHarness) await h.close();
    },
  };
  return harness;
}
