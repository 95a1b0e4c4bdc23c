/**
 * What the hook tests share: a small repository whose `hooks/hook.py` is a hook for every decision
 * (chosen by its first argument), the scripted model's view of requests, and the hook runs and
 * `hook.decided` events an operation recorded.
 */
import { execFileSync } from 'node:child_process';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { getEvents } from '../../client/session-events';
import type { SessionEvent } from '../../common/events';
import { RUN_HOOK_ACTIVITY } from '../../common/hooks';
import { containerNameOf } from '../../common/sandbox-names';
import type { ScriptedRequest } from '../../scripted-model/script';
import type { RecordedRequest } from '../../scripted-model/server';
import { writeRepository } from '../support/repositories';

/**
 * `python3 hooks/hook.py <mode> [arg]`: reads the event on stdin, appends it to
 * `/workspace/.hook-events.jsonl`, and decides as `mode` says.
 */
const HOOK_PY = `import json, os, sys
event = json.load(sys.stdin)
mode = sys.argv[1]
arg = sys.argv[2] if len(sys.argv) > 2 else ''
with open('/workspace/.hook-events.jsonl', 'a') as log:
    log.write(json.dumps(event) + '\\n')
name = event['hook_event_name']

def out(specific=None, **top):
    if specific is not None:
        top['hookSpecificOutput'] = dict(hookEventName=name, **specific)
    print(json.dumps(top))
    sys.exit(0)

if mode == 'allow': out(dict(permissionDecision='allow', permissionDecisionReason=arg))
if mode == 'deny': out(dict(permissionDecision='deny', permissionDecisionReason=arg))
if mode == 'ask': out(dict(permissionDecision='ask', permissionDecisionReason=arg))
if mode == 'replace': out(dict(updatedInput=dict(command=arg)))
if mode == 'context': out(dict(additionalContext=arg))
if mode == 'block-json': out(None, decision='block', reason=arg)
if mode == 'plain':
    print(arg)
    sys.exit(0)
if mode == 'block':
    print(arg, file=sys.stderr)
    sys.exit(2)
if mode == 'fail':
    print('the hook broke', file=sys.stderr)
    sys.exit(1)
if mode == 'no-force-push':
    command = event['tool_input'].get('command', '')
    words = command.split()
    if 'push' in words and ('--force' in words or '-f' in words):
        print('force pushes are not allowed here; push without --force', file=sys.stderr)
        sys.exit(2)
    sys.exit(0)
if mode == 'lint':
    path = event['tool_input']['path']
    lines = open(path).read().splitlines()
    problems = ['%s:%d: use let or const, not var' % (path, i + 1) for i, line in enumerate(lines) if line.lstrip().startswith('var ')]
    out(dict(additionalContext='lint: ' + ('; '.join(problems) if problems else 'clean')))
if mode == 'until':
    if os.path.exists(arg):
        sys.exit(0)
    print('%s is missing: the checks do not pass yet' % arg, file=sys.stderr)
    sys.exit(2)
print('unknown mode ' + mode, file=sys.stderr)
sys.exit(1)
`;

/** A command hook running `hooks/hook.py`. */
export const hook = (mode: string, arg = '', extra: Record<string, unknown> = {}) => ({
  type: 'command' as const,
  command: `python3 hooks/hook.py ${mode} ${shellQuote(arg)}`,
  ...extra,
});

const shellQuote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

/** A repository under the home directory (a root the hands worker allows) with the hook script and `extra` files. */
export function hookRepository(extra: Record<string, string> = {}): string {
  return writeRepository({ 'hooks/hook.py': HOOK_PY, 'README.md': 'hooks test\n', ...extra }, { underHome: true });
}

export interface Body {
  messages: Array<{ role: string; content: string | Array<{ type: string; text?: string; content?: unknown }> }>;
}
export const answered = (requests: RecordedRequest[]) =>
  requests.filter((r) => r.status === 200 && r.path === '/v1/messages');
export const bodyOf = (r: RecordedRequest) => r.body as Body;

/** Every text of a message (text blocks, and tool results' text). */
export function messageText(message: Body['messages'][number]): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .map((block) => {
      if (block.type === 'text') return block.text ?? '';
      if (block.type !== 'tool_result') return '';
      const { content } = block;
      if (typeof content === 'string') return content;
      return Array.isArray(content) ? content.map((c: { text?: string }) => c.text ?? '').join('\n') : '';
    })
    .join('\n');
}

/** The last turn answers with the tool results it received, so a test reads what the model saw. */
export const echoResults = {
  respond: (request: ScriptedRequest) => ({ text: JSON.stringify(request.toolResults) }),
};
export const seenResults = (finalText: string) =>
  JSON.parse(finalText) as Array<{ toolCallId: string; content: string; isError: boolean }>;

/** The operation's `hook.decided` events (`agent events`). */
export async function hookDecisions(client: Client, handle: WorkflowHandle): Promise<SessionEvent[]> {
  const { events } = await getEvents(client, { kind: 'operation', operationId: handle.workflowId });
  return events.filter((e) => e.type === 'hook.decided');
}

/** The ids of the operation's hook activities, in the order they were scheduled. */
export async function hookRuns(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? [])
    .map((e) => e.activityTaskScheduledEventAttributes)
    .filter((a) => a?.activityType?.name === RUN_HOOK_ACTIVITY)
    .map((a) => a!.activityId!);
}

/** A file of the session's workspace (undefined when it or the container is missing). */
export function workspaceFile(sessionId: string, file: string): string | undefined {
  try {
    return execFileSync('docker', ['exec', '-u', AGENT_USER, containerNameOf(sessionId), 'cat', `/workspace/${file}`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return undefined;
  }
}
