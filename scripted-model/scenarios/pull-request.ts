/**
 * The scripted agent of the pull-request work: the night's coding task on textkit (the initializer
 * and the coding agent of `coding-task.ts`), plus the agent of a review round, recognised by the
 * goal's first line (`common/task-prompts.ts`'s `REVISION_HEADING`):
 *  - for every comment on a file (`### <ref> — <author> on \`<path>\` line <n>`), a line noting the
 *    review at the top of that file; for a fix round, a line in CHANGELOG.md naming the failed checks;
 *  - the tests, a commit, and `.agent/pr-replies.json` with a reply per comment.
 * `holdRevision` makes it wait before its commit until `/tmp/release-revision` exists in the sandbox
 * (for crash tests); every commit command appends to `.agent/revision-effects.log`.
 */
import type { ScriptedRequest, ScriptedTurn } from '../script';
import { call, codingTaskScenario, firstUserText, toolIds, type CodingTaskScenarioOptions } from './coding-task';

export const REVISION_HEADING = '# Revise a pull request';

export interface PullRequestScenarioOptions {
  night?: CodingTaskScenarioOptions;
  holdRevision?: boolean;
}

interface Comment {
  ref: string;
  author: string;
  path?: string;
}

/** The comments a round's goal lists. */
export function goalComments(goal: string): Comment[] {
  const comments: Comment[] = [];
  for (const match of goal.matchAll(/^### (\S+) — (\S+)(?: on `([^`]+)`)?/gm)) {
    comments.push({ ref: match[1]!, author: match[2]!, ...(match[3] ? { path: match[3] } : {}) });
  }
  return comments;
}

export function pullRequestScenario(options: PullRequestScenarioOptions = {}) {
  const night = codingTaskScenario(options.night);
  return (request: ScriptedRequest): ScriptedTurn | undefined => {
    const goal = firstUserText(request);
    if (!goal.startsWith(REVISION_HEADING)) return night(request);
    const step = request.body.messages.filter((m) => m.role === 'assistant').length;
    return revisionTurn(goal, step, toolIds(goal, step, 'pr'), options.holdRevision === true);
  };
}

function revisionTurn(goal: string, step: number, ids: () => string, hold: boolean): ScriptedTurn {
  const comments = goalComments(goal);
  const failing = /^### (\S+): (failure|error)/gm;
  const checks = [...goal.matchAll(failing)].map((m) => m[1]!);
  switch (step) {
    case 0:
      return {
        text: 'Looking at the branch first.',
        toolCalls: [call(ids, 'bash', { command: 'git log --oneline -n 3 && git status --short' })],
      };
    case 1: {
      const edits = comments
        .filter((c) => c.path)
        .map((c) => `sed -i '1i // ${c.ref}: reviewed by ${c.author}' ${shellQuote(c.path!)}`);
      if (checks.length) edits.push(`printf -- '- fixed the failing checks: ${checks.join(', ')}\\n' >> CHANGELOG.md`);
      if (edits.length === 0) edits.push(`printf -- '- applied a requested change\\n' >> CHANGELOG.md`);
      const replies = comments.map((c) => ({
        ref: c.ref,
        addressed: true,
        reply: c.path ? `Done: noted your review at the top of ${c.path}.` : `Done, ${c.author}.`,
      }));
      return {
        text: 'Making the changes and writing my replies.',
        toolCalls: [
          call(ids, 'bash', { command: edits.join(' && ') }),
          call(ids, 'write_file', { path: '.agent/pr-replies.json', content: `${JSON.stringify(replies, null, 2)}\n` }),
        ],
      };
    }
    case 2: {
      const wait = hold ? 'while [ ! -f /tmp/release-revision ]; do sleep 0.2; done; ' : '';
      return {
        text: 'Running the tests and committing.',
        toolCalls: [
          call(ids, 'bash', {
            command: `echo commit >> /workspace/.agent/revision-effects.log; ${wait}npm test 2>&1 | grep -E '^# (pass|fail)'; git add -A && git commit -q -m "Address the review" && git log --oneline -n 1`,
            timeout_ms: 600_000,
          }),
        ],
      };
    }
    default:
      return {
        text: `Addressed ${comments.length} comment(s)${checks.length ? ` and the failing checks ${checks.join(', ')}` : ''}.`,
      };
  }
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The default script, for `npm run scripted-model -- --port N --script scripted-model/scenarios/pull-request.ts`. */
export default pullRequestScenario();
