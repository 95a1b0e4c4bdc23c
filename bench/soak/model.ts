/**
 * The soak's scripted agent: what the model answers for each kind of work, and the model faults the
 * injector asks for. One script function serves every request; it finds the piece of work and where
 * it stands from the conversation alone (the tag line of the prompt, the ids of the tool calls made
 * since), so a retried request gets the same answer, any brain worker can ask, and nothing here
 * depends on which requests came before.
 *
 * Every effect a `never` tool call has is one line in the workspace's `effects.log` naming the call
 * (its tool-use id, chosen here), so a call that ran twice shows as a line written twice. A workspace
 * filled to its quota (the `disk-full` fault) makes the next write fail with ENOSPC: the agent then
 * removes the filler and does that step again as a new call.
 *
 * Coding tasks are the textkit scenario (`scripted-model/scenarios/coding-task.ts`), with its commit
 * effect naming the feature and the attempt, so that only a repeated run of one operation's command
 * shows as a duplicate.
 */
import { contentBlocks } from '../../scripted-model/prompt';
import {
  codingTaskScenario,
  FEATURE_HEADING,
  firstUserText,
  INITIALIZER_HEADING,
} from '../../scripted-model/scenarios/coding-task';
import type { ScriptedFault, ScriptedRequest, ScriptedToolCall, ScriptedTurn } from '../../scripted-model/script';
import type { FaultKind, UnitKind } from './schedule';

/** The file a workspace is filled with by the `disk-full` fault (the agent removes it). */
export const FILLER = '/workspace/.soak-fill';
export const EFFECTS_LOG = '/workspace/effects.log';
export const HOOKS_LOG = '/workspace/hooks.log';
/** The coding task scenario's log of the commands that commit (one line per run of the command). */
export const COMMIT_EFFECTS_LOG = '/workspace/.agent/commit-effects.log';
/** The bash commands an `approval` unit's policy asks about. */
export const ASK_MARK = 'soak-ask';

type ModelFault = Extract<FaultKind, 'model-429' | 'model-529' | 'model-500' | 'model-stall'>;
export const MODEL_FAULTS: readonly ModelFault[] = ['model-429', 'model-529', 'model-500', 'model-stall'];
export const isModelFault = (kind: FaultKind): kind is ModelFault => (MODEL_FAULTS as readonly string[]).includes(kind);

/** The prompt's first line: `soak <unit> <kind>`, or `soak <unit> session <lane> <n>` for a lane's n-th prompt. */
export function promptTag(unitId: string, kind: UnitKind, lane?: { lane: string; n: number }): string {
  return lane ? `soak ${unitId} ${kind} ${lane.lane} ${lane.n}` : `soak ${unitId} ${kind}`;
}

/** A coding task's branch, which names its unit in the harness's own prompts. */
export const taskBranch = (unitId: string): string => `soak/${unitId}`;

const TAG = /^soak (\S+) (\S+)(?: (\S+) (\d+))?$/m;
const BRANCH = /branch `soak\/([^`]+)`/;
const NO_SPACE = /no space left on device/i;

interface Prompt {
  unitId: string;
  kind: string;
  /** The operation's key: the unit, or the unit, lane and prompt number. */
  opKey: string;
  /** Index of the user message holding the prompt. */
  index: number;
}

/** The last prompt in the conversation (a lane's next operation continues the previous one's). */
function lastPrompt(request: ScriptedRequest): Prompt | undefined {
  const messages = request.body.messages;
  for (let index = messages.length - 1; index >= 0; index--) {
    if (messages[index]!.role !== 'user') continue;
    const text = contentBlocks(messages[index]!.content)
      .filter((block) => block.type === 'text')
      .map((block) => String(block.text))
      .join('\n');
    const match = TAG.exec(text);
    if (!match) continue;
    const [, unitId, kind, lane, n] = match;
    const opKey = lane ? `${unitId}_${lane}${n}` : unitId!;
    return { unitId: unitId!, kind: kind!, opKey, index };
  }
  return undefined;
}

/** The unit a request belongs to: its prompt's tag, or a coding task's branch. */
export function unitOfRequest(request: ScriptedRequest): string | undefined {
  const prompt = lastPrompt(request);
  if (prompt) return prompt.unitId;
  return BRANCH.exec(firstUserText(request))?.[1];
}

const idPart = (text: string): string => text.replace(/[^A-Za-z0-9_-]/g, '_');
/** The tool-use id of an operation's step (`variant`: `fix<n>` for a repair, `re<n>` for a step done again). */
export const toolIdOf = (opKey: string, step: number, variant = '', n = 1): string =>
  `toolu_${idPart(opKey)}_${step}${variant ? `_${variant}` : ''}${n > 1 ? `_${n}` : ''}`;
const STEP_OF = /_(\d+)(?:_((?:fix|re)\d+))?(?:_\d+)?$/;

interface Position {
  step: number;
  variant: string;
}

/** Where the operation stands: the next step and its variant, from the calls made since its prompt. */
function positionOf(request: ScriptedRequest, prompt: Prompt): Position {
  const messages = request.body.messages.slice(prompt.index + 1);
  const turns = messages.filter((message) => message.role === 'assistant');
  const last = turns[turns.length - 1];
  if (!last) return { step: 0, variant: '' };
  const ids = contentBlocks(last.content)
    .filter((block) => block.type === 'tool_use')
    .map((block) => String(block.id));
  const parsed = STEP_OF.exec(ids[0] ?? '');
  if (!parsed) return { step: turns.length, variant: '' };
  const step = Number(parsed[1]);
  const fixes = turns.filter((turn) =>
    contentBlocks(turn.content).some((block) => block.type === 'tool_use' && /_fix\d+/.test(String(block.id))),
  ).length;
  if (parsed[2]?.startsWith('fix')) return { step, variant: `re${fixes}` };
  if (request.toolResults.some((result) => NO_SPACE.test(result.content))) return { step, variant: `fix${fixes + 1}` };
  return { step: step + 1, variant: '' };
}

const bash = (id: string, command: string): ScriptedToolCall => ({ id, name: 'bash', input: { command } });
/** A `never` call's effect: its own id, appended to the effects log. */
const effect = (id: string, then = ''): ScriptedToolCall =>
  bash(id, `echo ${id} >> ${EFFECTS_LOG}${then ? `; ${then}` : ''}`);

/** The turn of `step` for an operation of `kind`: tool calls, or the final text (undefined: off script). */
function stepTurn(kind: string, opKey: string, step: number, variant: string): ScriptedTurn | undefined {
  const id = (n = 1) => toolIdOf(opKey, step, variant, n);
  const done: ScriptedTurn = { text: `done ${opKey}` };
  const note = `notes/${idPart(opKey)}.txt`;
  switch (kind) {
    case 'op':
      return [
        { toolCalls: [effect(id(), 'sleep 1')] },
        { toolCalls: [{ id: id(), name: 'write_file', input: { path: note, content: `${opKey}\nfirst\n` } }] },
        {
          toolCalls: [
            { id: id(), name: 'read_file', input: { path: note } },
            { id: id(2), name: 'list_files', input: { path: 'notes' } },
          ],
        },
        { toolCalls: [{ id: id(), name: 'edit_file', input: { path: note, old_text: 'first', new_text: 'second' } }] },
        // A long output: the harness keeps its head and tail and spills the rest into the workspace.
        { toolCalls: [effect(id(), 'seq 1 30000')] },
        done,
      ][step];
    case 'approval':
      return [{ toolCalls: [effect(id(), `: ${ASK_MARK}`)] }, { toolCalls: [effect(id())] }, done][step];
    case 'hook':
      return [
        { toolCalls: [effect(id())] },
        { toolCalls: [{ id: id(), name: 'write_file', input: { path: note, content: `${opKey}\n` } }] },
        { toolCalls: [effect(id(), 'sleep 1')] },
        done,
      ][step];
    case 'abort':
      return [{ toolCalls: [effect(id(), 'sleep 300')] }, done][step];
    case 'fail':
      // Its budget allows two turns: the third is never asked for.
      return [{ toolCalls: [effect(id())] }, { toolCalls: [effect(id())] }, { toolCalls: [effect(id())] }, done][step];
    case 'session':
      return [
        { toolCalls: [effect(id(), 'sleep 1')] },
        { toolCalls: [{ id: id(), name: 'write_file', input: { path: note, content: `${opKey}\n` } }] },
        done,
      ][step];
    default:
      return undefined;
  }
}

/** The egress unit's fetch: its effect is the request the stand-in server counts (by path). */
function egressTurn(opKey: string, step: number, variant: string, url: string): ScriptedTurn | undefined {
  const id = toolIdOf(opKey, step, variant);
  const fetch = (path: string) =>
    `python3 -c 'import urllib.request as u; print(u.urlopen("${url}${path}", timeout=30).read().decode())' 2>&1 | tail -n 1`;
  return (
    [{ toolCalls: [effect(id, fetch(`/soak/${id}`))] }, { toolCalls: [effect(id, fetch(`/soak/${id}`))] }][step] ?? {
      text: `done ${opKey}`,
    }
  );
}

/** A model fault as the scripted server injects it. */
function scriptedFault(kind: ModelFault, stallMs: number): ScriptedFault {
  switch (kind) {
    case 'model-429':
      return { type: 'rate_limit', retryAfterSeconds: 1 };
    case 'model-529':
      return { type: 'overloaded' };
    case 'model-500':
      return { type: 'server_error', status: 500 };
    case 'model-stall':
      return { type: 'stall', ms: stallMs, afterBlocks: 0 };
  }
}

export interface ServedFault {
  kind: ModelFault;
  requestIndex: number;
  unitId: string;
  at: number;
}

export interface SoakModelOptions {
  /** The stand-in server the egress units fetch from (`http://<host address>:<port>`). */
  egressUrl: string;
  /** How long a stalled answer stalls (longer than the brains' stream idle timeout). */
  stallMs: number;
}

/**
 * The script and its bookkeeping: which unit each request belongs to (the ledger is checked per
 * unit), the model faults waiting for a request, and those served.
 */
export class SoakModel {
  readonly unitOf = new Map<number, string>();
  readonly served: ServedFault[] = [];
  private readonly pending: ModelFault[] = [];
  private readonly tasks = codingTaskScenario();

  constructor(private readonly options: SoakModelOptions) {}

  /** The next request of any unit gets this fault (the injector's model faults). */
  inject(kind: ModelFault): void {
    this.pending.push(kind);
  }

  /** Faults asked for and not yet served. */
  get waiting(): number {
    return this.pending.length;
  }

  readonly script = (request: ScriptedRequest): ScriptedTurn | undefined => {
    const unitId = unitOfRequest(request);
    if (unitId === undefined) return undefined;
    this.unitOf.set(request.requestIndex, unitId);
    const turn = this.turnFor(request);
    const kind = this.pending.shift();
    if (!turn || !kind) return turn;
    this.served.push({ kind, requestIndex: request.requestIndex, unitId, at: Date.now() });
    return { ...turn, fault: scriptedFault(kind, this.options.stallMs) };
  };

  private turnFor(request: ScriptedRequest): ScriptedTurn | undefined {
    const prompt = lastPrompt(request);
    if (!prompt) return this.taskTurn(request);
    const { step, variant } = positionOf(request, prompt);
    if (variant.startsWith('fix'))
      return {
        toolCalls: [bash(toolIdOf(prompt.opKey, step, variant), `rm -f ${FILLER}; df -h /workspace | tail -n 1`)],
      };
    if (prompt.kind === 'egress') return egressTurn(prompt.opKey, step, variant, this.options.egressUrl);
    return stepTurn(prompt.kind, prompt.opKey, step, variant);
  }

  /** A coding task's turn, its commit effect naming the feature and the attempt. */
  private taskTurn(request: ScriptedRequest): ScriptedTurn | undefined {
    const goal = firstUserText(request);
    if (!goal.startsWith(INITIALIZER_HEADING) && !goal.startsWith(FEATURE_HEADING)) return undefined;
    const turn = this.tasks(request);
    const feature = /^id: (\S+)$/m.exec(goal)?.[1];
    const attempt = /^attempt (\d+) of \d+$/m.exec(goal)?.[1] ?? '1';
    if (!turn?.toolCalls || !feature) return turn;
    const toolCalls = turn.toolCalls.map((call) => {
      const command = call.input.command;
      if (call.name !== 'bash' || typeof command !== 'string' || !command.includes(COMMIT_EFFECTS_LOG)) return call;
      return {
        ...call,
        input: { ...call.input, command: command.replace(`echo ${feature} >>`, `echo ${feature}#${attempt} >>`) },
      };
    });
    return { ...turn, toolCalls };
  }
}
