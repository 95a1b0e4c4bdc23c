/**
 * `agent report <id>`: the report of a workflow, by its type. A coding task's is its morning report
 * (while it runs: the report as it would read now). Other workflow types add their renderer to
 * `REPORTS`.
 */
import { WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { connectClient } from '../client/connection';
import { codingTaskResult } from '../client/task-result';
import { CODING_TASK_WORKFLOW_TYPE, taskStatusQuery } from '../common/coding-task';

/** Prints the report of one workflow; returns the exit code. */
export type ReportPrinter = (handle: WorkflowHandle, options: { json: boolean; running: boolean }) => Promise<number>;

export const REPORTS: Record<string, ReportPrinter> = {
  [CODING_TASK_WORKFLOW_TYPE]: printTaskReport,
};

export async function report(id: string, json: boolean): Promise<number> {
  const { client, connection } = await connectClient();
  try {
    const handle = client.workflow.getHandle(id);
    const description = await handle.describe().catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) throw new Error(`no task or operation with id ${id}`);
      throw err;
    });
    const printer = REPORTS[description.type];
    if (!printer) throw new Error(`agent report: ${id} is a workflow of type ${description.type}, which has no report`);
    return await printer(handle, { json, running: description.status.name === 'RUNNING' });
  } finally {
    await connection.close();
  }
}

async function printTaskReport(handle: WorkflowHandle, options: { json: boolean; running: boolean }): Promise<number> {
  if (options.running) {
    const status = await handle.query(taskStatusQuery);
    if (options.json) console.log(JSON.stringify(status, null, 2));
    else console.log(`(the task is still running: ${status.phase})\n\n${status.report}`);
    return 0;
  }
  const result = await codingTaskResult(handle);
  console.log(options.json ? JSON.stringify(result, null, 2) : result.report);
  return 0;
}
