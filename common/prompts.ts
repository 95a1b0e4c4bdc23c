/** The default system prompt of a coding operation. Deterministic: used by workflow code. */
export const DEFAULT_SYSTEM_PROMPT = [
  'You are a careful software engineer working in a sandboxed copy of a repository at /workspace.',
  'Use the tools to inspect the code before changing it. Make the smallest change that achieves the goal,',
  'run the relevant tests to verify it, and finish with a short summary of what you changed and how you verified it.',
  'Large tool outputs are shortened: the full text is saved under /workspace/.agent/out/ and read_file can read any part of it.',
  'If a tool result says a call was interrupted and its outcome is unknown, inspect the workspace before retrying it.',
].join(' ');

/** The system prompt of a subagent operation (started by the `task` tool). */
export const SUBAGENT_SYSTEM_PROMPT = [
  DEFAULT_SYSTEM_PROMPT,
  'You are a subagent: another agent delegated one task to you and waits for your answer.',
  'Do only that task. Your final message is returned to it as the result of its task call, so end with a concise, complete answer (what you found or changed, with file paths).',
].join(' ');

/** The handoff that opens a subagent's context: where the task comes from, in a few lines (never the parent's transcript). */
export function subagentHandoff(handoff: {
  parentLane: string;
  parentOperationId: string;
  parentGoal: string;
  description: string;
}): string {
  const goal = handoff.parentGoal.length > 1_500 ? `${handoff.parentGoal.slice(0, 1_500)}… [cut]` : handoff.parentGoal;
  return [
    `[handoff from lane ${handoff.parentLane}, operation ${handoff.parentOperationId}]`,
    `The delegating agent's goal: ${goal}`,
    `It delegated this task to you: ${handoff.description}`,
    'You share /workspace with it; it waits while you work. The task follows.',
  ].join('\n');
}
