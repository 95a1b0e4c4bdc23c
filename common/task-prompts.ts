/**
 * The goals of a coding task's operations, assembled by the harness. A feature operation starts a
 * fresh context from the handoff file, git and the feature — never from a previous transcript.
 * The scripted model recognises these texts by their first line and their `id:`/`attempt` lines,
 * so change them together with `scripted-model/scenarios/coding-task.ts`.
 *
 * Deterministic: pure functions (used by workflow code).
 */
import { FEATURE_ID_RULE, FEATURE_LIST_FILE, HANDOFF_FILE, INIT_SCRIPT_FILE, type Feature } from './feature-list';
import type { WorkspaceSnapshot } from './repo';
import { revisionCommentRef, type TaskRevision } from './coding-task';

/** Where a review round's agent writes its replies (`common/pull-request.ts` reads it). */
export const PR_REPLIES_FILE_PATH = '.agent/pr-replies.json';

export const INITIALIZER_HEADING = '# Initialize a long-running coding task';
export const FEATURE_HEADING = '# Implement one feature of a long-running coding task';

export interface InitializerGoalInput {
  branch: string;
  spec: { text: string; truncated: boolean; path?: string };
  verify?: string;
}

export function initializerGoal(input: InitializerGoalInput): string {
  const { spec } = input;
  const source = spec.path ? ` (the file \`${spec.path}\` in the repository)` : '';
  return [
    INITIALIZER_HEADING,
    '',
    `You are the first of many agents working on the branch \`${input.branch}\` of this repository (at /workspace).`,
    'Later agents each get a fresh context and implement exactly one feature, so this session sets up the',
    'files they will start from. Do not implement the features yourself.',
    '',
    `## The specification${source}`,
    '',
    spec.text.trim(),
    spec.truncated ? '\n[the specification was cut; read the rest from the file]' : '',
    '',
    '## What to do',
    '',
    `1. Read the repository and the specification. Expand the specification into \`${FEATURE_LIST_FILE}\` at the`,
    '   repository root: a JSON array of small, independently verifiable features, in the order to build them:',
    '',
    '   ```json',
    '   [{ "id": "short-id", "category": "…", "description": "what works when this feature is done",',
    '      "steps": ["how a person checks it, step by step"],',
    `      "verify": "a shell command that exits 0 only when the feature works", "passes": false }]`,
    '   ```',
    '',
    `   Ids: ${FEATURE_ID_RULE}. Every \`passes\` is false: only the harness sets it, after it`,
    '   runs the verification itself. After this session the list is fixed: features are never deleted,',
    '   added, reworded or re-ordered.',
    input.verify
      ? `   The harness also runs \`${input.verify}\` after every feature as a regression check; \`verify\` is optional.`
      : '   The task has no regression command, so every feature needs its own `verify` command.',
    `2. Write \`${INIT_SCRIPT_FILE}\` (executable): how to set up and run the project (install, build, start).`,
    `3. Write \`${HANDOFF_FILE}\` for the next agent with the sections Goal, Completed, Remaining, Changed Files,`,
    '   Decisions, Tests, Known Problems, Next Step and Verification.',
    `4. Commit these files (\`git add -A && git commit -m "…"\`). The harness pushes the branch (do not push:`,
    '   the sandbox has no git remote and no credentials; it reaches only what the egress policy allows).',
    '',
    'Finish with a short summary of the feature list.',
  ]
    .filter((line) => line !== undefined)
    .join('\n');
}

export interface FeatureGoalInput {
  branch: string;
  feature: Feature;
  attempt: number;
  maxAttempts: number;
  passing: number;
  total: number;
  taskVerify?: string;
  snapshot: WorkspaceSnapshot;
  /** Why the previous attempt at this feature was not accepted. */
  previousFailure?: string;
  /** Integrity problems the harness corrected after the previous operation. */
  corrections?: string[];
}

export function featureGoal(input: FeatureGoalInput): string {
  const { feature, snapshot } = input;
  const checks = [
    feature.verify ? `- the feature's check: \`${feature.verify}\`` : undefined,
    input.taskVerify ? `- the regression check: \`${input.taskVerify}\`` : undefined,
  ].filter((line): line is string => line !== undefined);
  return [
    FEATURE_HEADING,
    '',
    `You are continuing a long-running task on the branch \`${input.branch}\` of this repository (at /workspace),`,
    `with a fresh context. ${input.passing} of ${input.total} features pass so far. Your job is exactly one feature.`,
    '',
    '## Your feature',
    '',
    `id: ${feature.id}`,
    `attempt ${input.attempt} of ${input.maxAttempts}`,
    `category: ${feature.category}`,
    `description: ${feature.description}`,
    ...(feature.steps.length ? ['steps:', ...feature.steps.map((step, i) => `  ${i + 1}. ${step}`)] : []),
    '',
    'When you are done the harness verifies it itself, in this workspace:',
    ...checks,
    'Only when every check exits 0 does the harness mark the feature as passing.',
    ...(input.previousFailure ? ['', '## The previous attempt at this feature', '', input.previousFailure] : []),
    ...(input.corrections?.length
      ? ['', '## Corrected by the harness after the previous session', '', ...input.corrections.map((c) => `- ${c}`)]
      : []),
    '',
    '## How to work',
    '',
    `1. Check the handoff below against \`git status\` and \`git diff --stat\` first; where they disagree, git wins.`,
    `2. Run \`./${INIT_SCRIPT_FILE}\` if the project needs setting up, and make sure the existing tests pass.`,
    '3. Implement the feature and test it end to end, as a person would use it.',
    '4. Commit your work (`git add -A && git commit -m "…"`); the harness turns it into the feature\'s commit and',
    '   pushes it.',
    `5. Rewrite \`${HANDOFF_FILE}\` for the next agent (Goal, Completed, Remaining, Changed Files, Decisions, Tests,`,
    '   Known Problems, Next Step, Verification) and commit it.',
    `Do not edit \`${FEATURE_LIST_FILE}\`: the harness owns it and restores any change. Do not rewrite history.`,
    '',
    ...workspaceSections(snapshot, '(there is no handoff file yet)'),
    '',
    '## git diff --stat HEAD',
    '',
    snapshot.diffStat || '(no changes)',
    '',
    `## ${INIT_SCRIPT_FILE}`,
    '',
    snapshot.initScript?.trim() ? ['```sh', snapshot.initScript.trim(), '```'].join('\n') : '(there is no init.sh)',
  ].join('\n');
}

export const REVISION_HEADING = '# Revise a pull request';

export interface RevisionGoalInput {
  branch: string;
  revision: TaskRevision;
  attempt: number;
  maxAttempts: number;
  taskVerify?: string;
  snapshot: WorkspaceSnapshot;
  previousFailure?: string;
  /** The branch has a feature list the harness owns. */
  featureList: boolean;
}

const REVISION_INTRO: Record<TaskRevision['kind'], string> = {
  review: 'People reviewed the pull request of this branch. Address their comments below.',
  checks: "The pull request's checks failed on its latest commit. Make them pass.",
  command: 'Someone asked for a change to the pull request of this branch (an `/agent` comment).',
};

/** The goal of a review round: the request and the comments, what to reply, and the workspace as it is. */
export function revisionGoal(input: RevisionGoalInput): string {
  const { revision, snapshot } = input;
  const comments = revision.comments.map((comment) => {
    const where = comment.path ? ` on \`${comment.path}\`${comment.line ? ` line ${comment.line}` : ''}` : '';
    return [
      `### ${revisionCommentRef(comment)} — ${comment.author}${where}`,
      '',
      ...(comment.diffHunk ? ['```diff', comment.diffHunk.trim(), '```', ''] : []),
      comment.body.trim() || '(no text)',
    ].join('\n');
  });
  return [
    REVISION_HEADING,
    '',
    `You are working on the branch \`${input.branch}\` of this repository (at /workspace)${revision.pullRequest ? `, the head of pull request #${revision.pullRequest}` : ''},`,
    `with a fresh context. ${REVISION_INTRO[revision.kind]}`,
    `attempt ${input.attempt} of ${input.maxAttempts}`,
    '',
    '## The request',
    '',
    revision.instructions.trim(),
    ...(comments.length ? ['', '## The comments', '', ...comments.flatMap((c) => [c, ''])] : []),
    ...(input.previousFailure ? ['', '## The previous attempt', '', input.previousFailure] : []),
    '',
    '## How to work',
    '',
    '1. Check `git log`, `git status` and the handoff (if any) below; where they disagree, git wins.',
    '2. Make the changes on this branch and test them.',
    input.taskVerify
      ? `3. The harness then runs \`${input.taskVerify}\` itself; only when it exits 0 is your work committed and pushed.`
      : '3. The harness then commits your work as one commit and pushes it to the branch.',
    '4. Commit your work (`git add -A && git commit -m "…"`). Do not push and do not rewrite history.',
    ...(revision.comments.length
      ? [
          `5. Write \`${PR_REPLIES_FILE_PATH}\`: a JSON array with one entry per comment above,`,
          '   `{"ref": "<the comment\'s reference, e.g. review-comment-12>", "addressed": true|false, "reply": "…"}` —',
          '   what you changed, or why you did not. The harness posts each reply under its comment.',
        ]
      : []),
    ...(input.featureList
      ? [`Do not edit \`${FEATURE_LIST_FILE}\`: the harness owns it and restores any change.`]
      : []),
    '',
    ...workspaceSections(snapshot, '(there is no handoff file)'),
  ].join('\n');
}

/** The handoff, `git log` and `git status` of a fresh context's goal. */
function workspaceSections(snapshot: WorkspaceSnapshot, noHandoff: string): string[] {
  return [
    `## ${HANDOFF_FILE}`,
    '',
    snapshot.handoff?.trim() || noHandoff,
    '',
    '## git log (newest first)',
    '',
    snapshot.gitLog || '(no commits)',
    '',
    '## git status --short',
    '',
    snapshot.gitStatus || '(clean)',
  ];
}
