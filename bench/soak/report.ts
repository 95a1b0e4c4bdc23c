/** The soak's report (`soak-latest.md`) from its results: the verdict first, then each account in full. */
import type { TokenUsage } from '../../common/model-types';
import type { Counts, SoakResults } from './results';
import { FAULT_DESCRIPTIONS, FAULT_KINDS, UNIT_KINDS } from './schedule';

const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const mark = (ok: boolean): string => (ok ? '✅ pass' : '❌ fail');
const tokens = (u: TokenUsage): string =>
  `${u.input.toLocaleString('en-US')} in · ${u.cacheWrite.toLocaleString('en-US')} cache write · ${u.cacheRead.toLocaleString('en-US')} cache read · ${u.output.toLocaleString('en-US')} out`;
const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

const UNIT_DESCRIPTIONS: Record<string, string> = {
  op: 'an operation: a `never` bash call, write, read + list, edit, a bash call with a long output',
  approval: 'an operation whose first bash call asks for approval (approved 3 times in 4, else denied)',
  hook: 'an operation with a `never` PreToolUse hook on bash (logs each call) and a PostToolUse hook on writes',
  abort: 'an operation aborted while its long bash call runs',
  fail: 'an operation over its turn budget (2 turns): fails with `budget: turns`',
  egress: 'an operation whose bash calls fetch from a local host through the egress proxy (allow-list)',
  session: 'a session: lanes a and b at once, each a prompt and a follow-up that continues its conversation',
  task: 'a coding task on examples/textkit: initializer and three features, verified, pushed',
};

function countsRow(name: string, c: Counts): string {
  return `| ${name} | ${c.submitted} | ${c.accepted} | ${c.completed} | ${c.failed} | ${c.aborted} | ${c.lost} |`;
}

function verdictSection(r: SoakResults): string[] {
  const v = r.verdict;
  const w = r.work;
  const dup = r.effects.duplicates.length + r.effects.forbiddenRan.length;
  const kinds = FAULT_KINDS.filter((k) => r.faults.byKind[k].injected > 0).length;
  const unexpectedExits = r.restarts.filter((x) => !x.cause.startsWith('fault ')).length;
  return [
    '## Verdict',
    '',
    '| check | measured | verdict |',
    '|---|---|---|',
    `| every accepted unit ended: accepted = completed + failed + aborted, 0 lost | ${w.accepted} = ${w.completed} + ${w.failed} + ${w.aborted}, ${w.lost} lost, ${w.submitted - w.accepted} not accepted | ${mark(v.noneLost)} |`,
    `| no \`never\` effect twice, no denied or over-budget call run | ${r.effects.neverEffects + r.effects.hookEffects + r.effects.commitEffects} effects + ${r.effects.egressRequests} egress requests, ${dup} twice or forbidden | ${mark(v.noDuplicateEffects)} |`,
    `| ledger = the model server's count | ${r.ledger.unitsExact} units exact, ${r.ledger.unitsExplainedByKills.length} short by answers a brain SIGKILL took with it (of ${r.ledger.cutByKillRequests} requests), ${r.ledger.unitsExplainedByRefusals.length} by answers whose completion the server refused (${r.ledger.refusedModelCompletions} logged), ${r.ledger.unitsExplainedByRetries.length} by answers to attempts retried after the server gave up on them, ${r.ledger.mismatches.length} mismatched, ${r.ledger.unattributedRequests} unattributed | ${mark(v.ledgerExact)} |`,
    `| no leaks | ${r.leaks.total} | ${mark(v.noLeaks)} |`,
    `| every fault kind injected | ${kinds} of ${FAULT_KINDS.length} kinds, ${r.faults.fired.filter((f) => f.outcome === 'injected').length} faults | ${mark(v.everyFaultKind)} |`,
    `| no process exited on its own | ${unexpectedExits} unexpected exits | ${mark(v.noUnexpectedExit)} |`,
    '',
  ];
}

function setupSection(r: SoakResults): string[] {
  const run = r.run;
  return [
    '## Run',
    '',
    '|  |  |',
    '|---|---|',
    `| command | \`npm run soak -- --minutes ${run.minutes} --seed ${run.seed} --concurrency ${run.concurrency}\` |`,
    `| run | ${run.runId}: ${run.startedAt} → ${run.endedAt} |`,
    `| timeline | setup ${s(run.setupMs)}; then load without faults until +${s(run.warmupMs)}, faults until +${s(run.faultPhaseEndMs)}, load until +${s(run.loadEndMs)}, drained at +${s(run.drainedAtMs)} |`,
    `| Temporal | ${run.temporal} |`,
    '| processes | two `agent worker brain`, two `agent worker hands` (host-a on the default Docker engine, host-b on a second `dockerd`), one shared hands queue |',
    `| settings | ${Object.entries(run.settings)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')} |`,
    `| machine | ${run.machine.cpus} cores, ${run.machine.memoryGb} GiB; load average ${run.machine.loadAverage.start} at the start, ${run.machine.loadAverage.end} at the end |`,
    '',
  ];
}

function workSection(r: SoakResults): string[] {
  const w = r.work;
  const reasons = new Map<string, number>();
  for (const o of w.notCompleted) {
    const key = `${o.kind} · ${o.state} · ${o.reason.slice(0, 160)}`;
    reasons.set(key, (reasons.get(key) ?? 0) + 1);
  }
  return [
    '## Work',
    '',
    '| units | submitted | accepted | completed | failed | aborted | lost |',
    '|---|---|---|---|---|---|---|',
    ...UNIT_KINDS.filter((k) => w.byKind[k]).map((k) => countsRow(`${k}: ${UNIT_DESCRIPTIONS[k]}`, w.byKind[k]!)),
    countsRow('**all units**', w),
    countsRow('operations (a session has four; a task counts once above)', w.operations),
    '',
    'Every unit that did not complete, by reason:',
    '',
    ...(reasons.size ? [...reasons].map(([reason, n]) => `- ${n} × ${cell(reason)}`) : ['- none']),
    '',
    `Units that ended otherwise than their kind does without faults: ${w.unexpected.length}`,
    ...w.unexpected.map((o) => `- ${o.unit} (${o.kind}): ${o.state} (expected ${o.expected}): ${cell(o.reason)}`),
    ...(w.lostUnits.length
      ? ['', 'Lost:', ...w.lostUnits.map((l) => `- ${l.unit} (${l.kind}): ${cell(l.error)}`)]
      : []),
    '',
  ];
}

function effectsSection(r: SoakResults): string[] {
  const e = r.effects;
  return [
    '## Effects',
    '',
    `${e.workspacesRead} of ${e.workspacesFound} workspaces read after their work ended: ${e.neverEffects} lines of \`never\` bash calls (each names its call), ${e.hookEffects} of \`never\` PreToolUse hooks, ${e.commitEffects} of the coding tasks' commit commands; ${e.egressRequests} requests to the egress units' host (each path once).`,
    '',
    `- made twice: ${e.duplicates.length ? '' : 'none'}`,
    ...e.duplicates.map((d) => `  - ${d.unit} ${d.log}: \`${cell(d.line)}\` × ${d.count}`),
    `- denied or over-budget calls that ran: ${e.forbiddenRan.length ? '' : 'none'}`,
    ...e.forbiddenRan.map((f) => `  - ${f.unit}: ${f.call}`),
    '',
  ];
}

function ledgerSection(r: SoakResults): string[] {
  const l = r.ledger;
  return [
    '## Ledger',
    '',
    `${l.requests} model requests. Checked per unit: what its operations, lanes or task recorded against what the server reported for its requests.`,
    '',
    `- the model server reported: ${tokens(l.served)}`,
    `- the harness recorded: ${tokens(l.recorded)}`,
    `- answers a brain SIGKILL took with it, whose usage reached no one (${l.cutByKillRequests} requests, a killed brain's last of a unit still running or cut off while read; ${l.unitsExplainedByKills.length} units short by exactly some of them): ${tokens(l.lostWithKilledBrains)}`,
    `- answers whose completion the Temporal server refused — the attempt had timed out on its heartbeat while the history service was down, and was retried; the brains' logs name each (\`Activity not found on completion\`, ${l.refusedModelCompletions} of model calls) and no history holds them (${l.unitsExplainedByRefusals.length} units short by exactly some of that brain's last answers for them): ${tokens(l.refusedByServer)}`,
    `- answers to model-call attempts the server gave up on and that were retried — the unit sent the same request again and its histories show at least as many retried attempts (the last attempt's number of each model activity); paid, and in no history unless a heartbeat carried the usage (${l.unitsExplainedByRetries.length} units short by exactly some of the earlier answers to a request sent again): ${tokens(l.paidForRetriedAttempts)}`,
    `- units exact: ${l.unitsExact}; mismatched: ${l.mismatches.length}; requests of no unit: ${l.unattributedRequests}`,
    ...l.mismatches.map((m) => `  - ${m.unit}: served ${tokens(m.served)}; recorded ${tokens(m.recorded)}`),
    '',
  ];
}

function leaksSection(r: SoakResults): string[] {
  const l = r.leaks;
  const list = (label: string, items: readonly string[]) =>
    `- ${label}: ${items.length ? items.map(cell).join(', ') : 'none'}`;
  return [
    '## Leaks',
    '',
    list(
      'containers still there after their work ended',
      l.containersLeftAfterEnd.map((c) => `${c.container} on ${c.host} (${c.state}, ${c.unit})`),
    ),
    list('containers after every sandbox was removed', l.afterRemoval.containers),
    list('volumes', l.afterRemoval.volumes),
    list('loop devices', l.afterRemoval.loopDevices),
    list('workspace images', l.afterRemoval.imageFiles),
    list('workflows still running after the drain', l.workflowsRunning),
    list('processes outliving their worker', l.orphanProcesses),
    `- dependency cache volumes (kept by design per repository and host; removed by the soak): ${l.cacheVolumesRemoved.length}`,
    '',
  ];
}

function faultsSection(r: SoakResults): string[] {
  const f = r.faults;
  return [
    '## Faults',
    '',
    '| fault | planned | injected | no target | what it does |',
    '|---|---|---|---|---|',
    ...FAULT_KINDS.map(
      (k) =>
        `| ${k} | ${f.byKind[k].planned} | ${f.byKind[k].injected} | ${f.byKind[k].noTarget} | ${FAULT_DESCRIPTIONS[k]} |`,
    ),
    '',
    '<details><summary>Every fault fired, with its target</summary>',
    '',
    '| # | at | fault | outcome | target | detail |',
    '|---|---|---|---|---|---|',
    ...f.fired.map(
      (x) =>
        `| ${x.n} | +${s(x.atMs)} | ${x.kind} | ${x.outcome} | ${cell(x.target ?? '')} | ${cell(x.detail ?? '')} |`,
    ),
    '',
    '</details>',
    '',
  ];
}

function latencySection(r: SoakResults): string[] {
  const { beforeFaults: b, duringFaults: d } = r.latency;
  const ms = (v: number) => (Number.isFinite(v) ? `${(v / 1000).toFixed(2)} s` : '–');
  return [
    '## Latency',
    '',
    'Plain operations (`op` units: six model turns, five tool calls), submission to result, completed ones.',
    '',
    '| | operations | p50 | p95 |',
    '|---|---|---|---|',
    `| before faults (ended before the first) | ${b.count} | ${ms(b.p50Ms)} | ${ms(b.p95Ms)} |`,
    `| during faults (submitted in the fault phase) | ${d.count} | ${ms(d.p50Ms)} | ${ms(d.p95Ms)} |`,
    '',
  ];
}

function restartsSection(r: SoakResults): string[] {
  const at = (ms?: number) => (ms === undefined ? '–' : new Date(ms).toISOString().slice(11, 23));
  return [
    '## Process restarts',
    '',
    '| process | cause | old pid | down | started | ready | new pid |',
    '|---|---|---|---|---|---|---|',
    ...r.restarts.map(
      (x) =>
        `| ${x.process} | ${cell(x.cause)} | ${x.oldPid} | ${at(x.downAt)} | ${at(x.startedAt)} | ${at(x.readyAt)} | ${x.newPid ?? '–'} |`,
    ),
    '',
    `The history service's restarts are the history-kill faults above (${r.faults.byKind['history-kill'].injected}).`,
    '',
  ];
}

export function renderSoakMarkdown(r: SoakResults): string {
  return [
    `# Chaos soak: durable agent harness (${r.run.minutes} min)`,
    '',
    `Produced by \`npm run soak\` (\`bench/soak/\`); the figures are in \`soak-latest.json\` (\`bench/soak/results.ts\`). Seed \`${r.run.seed}\`: the same seed gives the same fault schedule and the same sequence of work.`,
    '',
    ...verdictSection(r),
    ...setupSection(r),
    ...workSection(r),
    ...effectsSection(r),
    ...ledgerSection(r),
    ...leaksSection(r),
    ...faultsSection(r),
    ...latencySection(r),
    ...restartsSection(r),
    '## Problems',
    '',
    ...(r.problems.length ? r.problems.map((p) => `- ${cell(p)}`) : ['- none']),
    '',
  ].join('\n');
}
