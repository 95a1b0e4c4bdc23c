/**
 * Talking to sessions from a client (CLI, tests): submitting a prompt durably with Update-with-Start
 * (the session is created on first use), reading a session's state, and finding the session of an
 * operation.
 */
import {
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure, type Duration } from '@temporalio/common';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import {
  promptUpdate,
  SESSION_WORKFLOW_TYPE,
  sessionIdOfWorkflow,
  sessionStatusQuery,
  sessionWorkflowId,
  setFactUpdate,
  type PromptAccepted,
  type PromptInput,
  type SessionInput,
  type SessionStatus,
} from '../common/session';

/** A refusal from a session or operation validator, with its failure type (`LaneAborting`, `UnknownToolCall`, …). */
export class Refused extends Error {
  override name = 'Refused';
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** Turns an Update's rejection into a `Refused` carrying the validator's type and message. */
export function refusalOf(err: unknown): unknown {
  if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
    return new Refused(err.cause.type ?? 'Refused', err.cause.message);
  }
  return err;
}

export interface SubmitPromptOptions {
  sessionId: string;
  prompt: PromptInput;
  /** How to create the session if it does not exist yet (ignored when it does). */
  session?: SessionInput;
  /** The brain task queue the session runs on. */
  taskQueue: string;
  /** Update id: a client that retries with the same id gets the same answer (the prompt is accepted once). */
  updateId?: string;
  /** The session workflow's task timeout (how soon a task lost with its worker is retried; default 10 s). */
  workflowTaskTimeout?: Duration;
}

/**
 * Submits a prompt: creates the session if needed and returns once the prompt is durable — its
 * operation started, or queued behind the lane's open operation.
 */
export async function submitPrompt(client: Client, options: SubmitPromptOptions): Promise<PromptAccepted> {
  const startWorkflowOperation = new WithStartWorkflowOperation(SESSION_WORKFLOW_TYPE, {
    workflowId: sessionWorkflowId(options.sessionId),
    taskQueue: options.taskQueue,
    args: [{ ...options.session, sessionId: options.sessionId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    ...(options.workflowTaskTimeout ? { workflowTaskTimeout: options.workflowTaskTimeout } : {}),
    staticSummary: `session ${options.sessionId}`,
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.kind, value: 'session' },
      { key: SEARCH_ATTRIBUTES.status, value: 'running' },
    ],
  });
  try {
    return await client.workflow.executeUpdateWithStart(promptUpdate, {
      args: [options.prompt],
      startWorkflowOperation,
      ...(options.updateId ? { updateId: options.updateId } : {}),
    });
  } catch (err) {
    throw refusalOf(err);
  }
}

export function sessionHandle(client: Client, sessionId: string): WorkflowHandle {
  return client.workflow.getHandle(sessionWorkflowId(sessionId));
}

/** The session's state (its `session` query); a clear error when there is no such session. */
export async function readSession(client: Client, sessionId: string): Promise<SessionStatus> {
  try {
    return await sessionHandle(client, sessionId).query(sessionStatusQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new Refused('UnknownSession', `no session ${sessionId}`);
    throw err;
  }
}

/** Whether a session with this id exists (running or not). */
export async function sessionExists(client: Client, sessionId: string): Promise<boolean> {
  try {
    await sessionHandle(client, sessionId).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** The session an operation belongs to: its parent session workflow, else the operation's own session id. */
export async function sessionOfOperation(client: Client, operationId: string): Promise<string | undefined> {
  const description = await client.workflow.getHandle(operationId).describe();
  const parent = description.raw.workflowExecutionInfo?.parentExecution?.workflowId;
  const fromParent = parent ? sessionIdOfWorkflow(parent) : undefined;
  if (fromParent) return fromParent;
  const root = description.raw.workflowExecutionInfo?.rootExecution?.workflowId;
  return root ? sessionIdOfWorkflow(root) : undefined;
}

/** Sets a global fact of an existing session (last write wins); the session's answer. */
export async function setFact(
  client: Client,
  sessionId: string,
  key: string,
  value: string,
): Promise<{ key: string; seq: number; previous?: string }> {
  try {
    return await sessionHandle(client, sessionId).executeUpdate(setFactUpdate, { args: [{ key, value }] });
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new Refused('UnknownSession', `no running session ${sessionId}`);
    throw refusalOf(err);
  }
}
