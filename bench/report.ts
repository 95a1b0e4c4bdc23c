/**
 * The readable report of a bench run: `latest.md` (machine, targets with verdicts, one section per
 * scenario, notes) and `latest.svg`, a chart of the main figures drawn here as plain SVG (grouped bar
 * panels; no chart library).
 */
import type { BenchResults, CacheWriteCauses } from './results';

// ---- SVG ----

interface Bar {
  value: number;
  color: string;
}

interface Group {
  label: string;
  bars: Bar[];
}

interface Panel {
  title: string;
  unit: string;
  groups: Group[];
  legend: { label: string; color: string }[];
  /** Formats the value printed above a bar. */
  format?: (value: number) => string;
}

const COLORS = { a: '#7f9cc8', b: '#e8835f', c: '#8cc084', d: '#c9a0dc' };
const PANEL_W = 460;
const PANEL_H = 300;

const escapeXml = (text: string): string =>
  text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

function niceMax(value: number): number {
  if (!(value > 0)) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  const step = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10].find((s) => s * magnitude >= value)!;
  return step * magnitude;
}

function compact(value: number): string {
  if (!Number.isFinite(value)) return '–';
  const abs = Math.abs(value);
  const trim = (x: number, digits: number) => String(Number(x.toFixed(digits)));
  if (abs >= 1e6) return `${trim(value / 1e6, 2)}M`;
  if (abs >= 1e4) return `${trim(value / 1e3, 1)}k`;
  if (abs >= 1e3) return `${trim(value / 1e3, 2)}k`;
  return abs >= 100 || Number.isInteger(value) ? value.toFixed(0) : value.toFixed(1);
}

function panelSvg(panel: Panel, x: number, y: number): string {
  const left = 56;
  const top = 46;
  const plotW = PANEL_W - left - 16;
  const plotH = PANEL_H - top - 58;
  const max = niceMax(
    Math.max(
      0,
      ...panel.groups.flatMap((group) => group.bars.map((bar) => (Number.isFinite(bar.value) ? bar.value : 0))),
    ),
  );
  const format = panel.format ?? compact;
  const out: string[] = [`<g transform="translate(${x},${y})">`];
  out.push(`<rect x="0.5" y="0.5" width="${PANEL_W - 1}" height="${PANEL_H - 1}" fill="#fff" stroke="#ddd"/>`);
  out.push(
    `<text x="${PANEL_W / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${escapeXml(panel.title)}</text>`,
  );
  out.push(`<text x="12" y="${top - 8}" font-size="11" fill="#555">${escapeXml(panel.unit)}</text>`);
  for (let tick = 0; tick <= 4; tick++) {
    const value = (max * tick) / 4;
    const ty = top + plotH - (plotH * tick) / 4;
    out.push(
      `<line x1="${left}" x2="${left + plotW}" y1="${ty}" y2="${ty}" stroke="${tick === 0 ? '#888' : '#eee'}"/>`,
    );
    out.push(
      `<text x="${left - 6}" y="${ty + 4}" text-anchor="end" font-size="10" fill="#555">${compact(value)}</text>`,
    );
  }
  const groupW = plotW / Math.max(1, panel.groups.length);
  panel.groups.forEach((group, gi) => {
    const barW = Math.min(48, (groupW * 0.8) / Math.max(1, group.bars.length));
    const start = left + gi * groupW + (groupW - barW * group.bars.length) / 2;
    group.bars.forEach((bar, bi) => {
      const value = Number.isFinite(bar.value) ? bar.value : 0;
      const h = (plotH * value) / max;
      const bx = start + bi * barW;
      out.push(
        `<rect x="${bx.toFixed(1)}" y="${(top + plotH - h).toFixed(1)}" width="${(barW - 3).toFixed(1)}" height="${h.toFixed(1)}" fill="${bar.color}"/>`,
      );
      out.push(
        `<text x="${(bx + (barW - 3) / 2).toFixed(1)}" y="${(top + plotH - h - 4).toFixed(1)}" text-anchor="middle" font-size="10">${escapeXml(format(bar.value))}</text>`,
      );
    });
    out.push(
      `<text x="${(left + gi * groupW + groupW / 2).toFixed(1)}" y="${top + plotH + 16}" text-anchor="middle" font-size="11">${escapeXml(group.label)}</text>`,
    );
  });
  let lx = left;
  for (const item of panel.legend) {
    out.push(`<rect x="${lx}" y="${PANEL_H - 22}" width="10" height="10" fill="${item.color}"/>`);
    out.push(`<text x="${lx + 14}" y="${PANEL_H - 13}" font-size="11">${escapeXml(item.label)}</text>`);
    lx += 24 + item.label.length * 6.2;
  }
  out.push('</g>');
  return out.join('\n');
}

function panelsOf(results: BenchResults): Panel[] {
  const panels: Panel[] = [];
  const o = results.overhead;
  if (o) {
    panels.push({
      title: 'Overhead: ms per step (median)',
      unit: 'ms',
      groups: [o.latency0, o.latency200, o.latency500].map((point) => ({
        label: `model latency ${point.latencyMs} ms`,
        bars: [
          { value: point.plainMsPerStep, color: COLORS.a },
          { value: point.durableMsPerStep, color: COLORS.b },
        ],
      })),
      legend: [
        { label: 'plain loop', color: COLORS.a },
        { label: 'durable harness', color: COLORS.b },
      ],
    });
  }
  const h = results.history;
  if (h) {
    panels.push({
      title: 'History: bytes per step',
      unit: 'bytes',
      groups: h.points.map((point) => ({
        label: `${point.steps} steps (${point.runs} run${point.runs > 1 ? 's' : ''})`,
        bars: [
          { value: point.bytesPerStep, color: COLORS.a },
          { value: point.bytesPerStepExcludingContent, color: COLORS.c },
        ],
      })),
      legend: [
        { label: 'all', color: COLORS.a },
        { label: 'excluding message content', color: COLORS.c },
      ],
    });
  }
  const t = results.tokens;
  if (t) {
    panels.push({
      title: `Tokens: ${t.turns} turns of 20–200 KB outputs (cost below)`,
      unit: 'tokens',
      groups: (
        [
          ['naive', t.naive],
          ['cached', t.cachedFullOutput],
          ['spill', t.spillOnly],
          ['+editing', t.spillEditing],
          ['+compaction', t.harness],
        ] as const
      ).map(([label, way]) => ({
        label: `${label} · $${way.costUsd.toFixed(2)}`,
        bars: [
          { value: way.uncachedInput, color: COLORS.b },
          { value: way.cacheWrite, color: COLORS.d },
          { value: way.cacheRead, color: COLORS.a },
        ],
      })),
      legend: [
        { label: 'uncached input', color: COLORS.b },
        { label: 'cache write', color: COLORS.d },
        { label: 'cache read', color: COLORS.a },
      ],
    });
  }
  const f = results.ttft;
  if (f) {
    panels.push({
      title: 'Time to first model request (median)',
      unit: 'ms',
      groups: [
        { label: 'no sandbox', bars: [{ value: f.noSandboxMs, color: COLORS.a }] },
        { label: 'lazy (default)', bars: [{ value: f.lazyMs, color: COLORS.c }] },
        { label: 'eager', bars: [{ value: f.eagerMs, color: COLORS.b }] },
      ],
      legend: [{ label: 'submit → first model request', color: COLORS.c }],
    });
  }
  const e = results.environment;
  if (e) {
    panels.push({
      title: `Environment: start (cold build ${(e.coldBuildMs / 1000).toFixed(0)} s)`,
      unit: 'ms',
      groups: [
        {
          label: 'default image',
          bars: [
            { value: e.defaultStartMs, color: COLORS.c },
            { value: e.prepareMs.default, color: COLORS.d },
          ],
        },
        {
          label: 'cached environment',
          bars: [
            { value: e.warmStartMs, color: COLORS.c },
            { value: e.prepareMs.warm, color: COLORS.d },
          ],
        },
      ],
      legend: [
        { label: 'submit → first tool result in', color: COLORS.c },
        { label: 'of it: preparing the environment', color: COLORS.d },
      ],
    });
  }
  return panels;
}

export function renderSvg(results: BenchResults): string {
  const panels = panelsOf(results);
  const columns = 2;
  const rows = Math.max(1, Math.ceil(panels.length / columns));
  const width = columns * PANEL_W + (columns + 1) * 12;
  const height = rows * PANEL_H + (rows + 1) * 12 + 28;
  const body = panels.map((panel, index) =>
    panelSvg(panel, 12 + (index % columns) * (PANEL_W + 12), 40 + Math.floor(index / columns) * (PANEL_H + 12)),
  );
  const title = `Durable agent harness benchmark — ${results.profile} run, ${results.finishedAt.slice(0, 10)}, ${results.machine.cores} cores (${results.machine.cpuModel})`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif">`,
    `<rect width="${width}" height="${height}" fill="#fafafa"/>`,
    `<text x="12" y="26" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

// ---- Markdown ----

const table = (header: string[], rows: (string | number)[][]): string =>
  [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');

const n = (value: number, digits = 1): string =>
  Number.isFinite(value)
    ? value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 })
    : '–';
const pct = (value: number): string => `${(value * 100).toFixed(1)} %`;
const verdictMark = { pass: '✅ pass', fail: '❌ fail', 'not run': '– not run' } as const;

export function renderMarkdown(results: BenchResults, svgFile: string): string {
  const m = results.machine;
  const out: string[] = [];
  out.push(`# Benchmark: durable agent harness (${results.profile} run)`);
  out.push('');
  out.push(
    `Run ${results.startedAt} → ${results.finishedAt} (${(results.wallMs / 1000).toFixed(0)} s of scenarios). ` +
      `Produced by \`npm run bench${results.profile === 'quick' ? ' -- --quick' : ''}\`; the numbers are in \`latest.json\` (schema: \`bench/results.ts\`).`,
  );
  out.push('');
  out.push('## Machine');
  out.push('');
  out.push(
    table(
      ['', ''],
      [
        ['CPU', `${m.cpuModel}, ${m.cores} cores`],
        ['memory', `${m.memoryGb} GiB`],
        ['OS', m.os],
        ['Node.js', m.node],
        ['Docker', m.docker],
        ['Temporal', m.temporal],
        [
          'Temporal server used',
          `${results.setup.temporal} (${results.setup.temporalAddress})${Object.keys(results.setup.dynamicConfig).length ? `, dynamic config ${JSON.stringify(results.setup.dynamicConfig)}` : ''}`,
        ],
        ['sandbox image', results.setup.sandboxImage],
        ['model', results.setup.model],
        ['load average (1 min)', `${m.loadAverage.start} at the start, ${m.loadAverage.end} at the end`],
      ],
    ),
  );
  out.push('');
  out.push('## Targets');
  out.push('');
  out.push(
    table(
      ['target', 'measured', 'verdict'],
      results.targets.map((row) => [`${row.description}: ${row.target}`, row.measured, verdictMark[row.verdict]]),
    ),
  );
  out.push('');
  out.push(`![main figures](${svgFile})`);
  out.push('');

  const floor = results.floor;
  if (floor) out.push(...floorSection(floor, results));

  const o = results.overhead;
  if (o) {
    out.push('## 1. Overhead per step');
    out.push('');
    out.push(
      'The same scripted task — N steps, each one model call and one `bash: true` in the sandbox — run by a plain in-process loop ' +
        "(same `sendMessagesRequest` and client, same hands tool code and sandboxes (`createSandboxes`), tool commands through the sandbox's executor) and by the durable harness " +
        `(operation workflow; ${o.worker}). ` +
        'A step is the gap between two consecutive model requests at the scripted server; runs alternate plain/durable (at latency 0: plain, plain with `docker exec`, durable) after one warm-up of each, the first gap of each run (container creation) left out.',
    );
    out.push('');
    out.push(
      table(
        [
          'model latency',
          'runs × steps',
          'plain median',
          'plain p95',
          'durable median',
          'durable p95',
          'added (median)',
          'added (p95)',
          'ratio',
          'first step plain / durable',
          'samples',
        ],
        [o.latency0, o.latency200, o.latency500].map((p) => [
          `${p.latencyMs} ms`,
          `${p.runs} × ${p.stepsPerRun}`,
          `${n(p.plainMsPerStep)} ms`,
          `${n(p.plainP95Ms)} ms`,
          `${n(p.durableMsPerStep)} ms`,
          `${n(p.durableP95Ms)} ms`,
          `${n(p.addedMsPerStep)} ms`,
          `${n(p.p95AddedMs)} ms`,
          n(p.ratio, 3),
          `${n(p.firstStepMs.plain, 0)} / ${n(p.firstStepMs.durable, 0)} ms`,
          p.samples,
        ]),
      ),
    );
    out.push('');
    const ps = o.plainStep;
    out.push(
      `The plain step at model latency 0 with the sandbox's executor (a persistent process per sandbox runs each tool command) against a \`docker exec\` per command (create, start, attach), measured in the same run, alternating (${ps.runs} × ${ps.stepsPerRun} steps each, ${ps.samples} samples): ` +
        `median ${n(ps.executorMsPerStep)} ms vs ${n(ps.dockerExecMsPerStep)} ms — ${n(ps.gainMsPerStep)} ms saved per step; p95 ${n(ps.executorP95Ms)} ms vs ${n(ps.dockerExecP95Ms)} ms.`,
    );
    out.push('');
    const st = o.stackTracesOff;
    if (st) {
      out.push(
        `Stack traces: the Temporal SDK records a stack trace for every promise a workflow creates (the Web UI's Stack Trace tab); ` +
          `the durable harness on a second worker process with \`AGENT_WORKFLOW_STACK_TRACES=off\` (no recording), alternating with the others at model latency 0 ` +
          `(${st.runs} × ${st.stepsPerRun} steps, ${st.samples} samples): median step ${n(st.onMsPerStep)} ms with stack traces (the default) vs ${n(st.offMsPerStep)} ms without ` +
          `(${n(st.savedMsPerStep)} ms saved; added overhead without them ${n(st.addedMsPerStep)} ms); a workflow task takes ${n(st.workflowTaskOnMs, 2)} vs ${n(st.workflowTaskOffMs, 2)} ms in the worker (SDK metrics, means over each worker's runs).`,
      );
      out.push('');
    }
    if (o.segments.length) {
      out.push('Long runs (model latency 0), medians per step range:');
      out.push('');
      out.push(
        table(
          ['steps', 'plain', 'durable', 'added', 'samples'],
          o.segments.map((seg) => [
            `${seg.fromStep}–${seg.toStep}`,
            `${n(seg.plainMsPerStep)} ms`,
            `${n(seg.durableMsPerStep)} ms`,
            `${n(seg.addedMsPerStep)} ms`,
            seg.samples,
          ]),
        ),
      );
      out.push('');
    }
    const tl = o.timeline;
    out.push(
      `Where a durable step's time goes (medians over the steps of the longest latency-0 run, server event times): ` +
        `model step ${n(tl.modelScheduleToStartMs)} ms to start (eager) + ${n(tl.modelStartToCloseMs)} ms to run; ` +
        `tool call ${n(tl.toolScheduleToStartMs)} ms to start (through matching) + ${n(tl.toolStartToCloseMs)} ms to run; ` +
        `each of the two workflow tasks ${n(tl.completedToWorkflowTaskMs)} ms to be scheduled after the result, ${n(tl.workflowTaskScheduleToStartMs)} ms to reach the worker ` +
        `and ${n(tl.workflowTaskStartToCompleteMs)} ms from start to completion (the workflow's turn, the completion call and the server's write).` +
        (o.timeline200
          ? ` At model latency 200 ms (first run): model step ${n(o.timeline200.modelScheduleToStartMs)} + ${n(o.timeline200.modelStartToCloseMs)} ms, ` +
            `tool call ${n(o.timeline200.toolScheduleToStartMs)} + ${n(o.timeline200.toolStartToCloseMs)} ms, workflow tasks ${n(o.timeline200.completedToWorkflowTaskMs)} + ` +
            `${n(o.timeline200.workflowTaskScheduleToStartMs)} + ${n(o.timeline200.workflowTaskStartToCompleteMs)} ms.`
          : ''),
    );
    out.push('');
    const wm = o.workerMetrics;
    out.push(
      `The worker's side (SDK metrics, means over the scenario): a workflow task takes ${n(wm.workflowTaskExecutionMs, 2)} ms in the worker ` +
        `(${n(wm.workflowTasks, 0)} tasks); completing it costs a ${n(wm.respondWorkflowTaskCompletedMs, 2)} ms call to the server, completing an activity ` +
        `${n(wm.respondActivityTaskCompletedMs, 2)} ms; ${n(wm.heartbeatCalls, 0)} heartbeat calls (${n(wm.heartbeatCallMs, 2)} ms each) for ${n(wm.activities, 0)} activities.`,
    );
    out.push('');
    const cpu = o.cpuProfile;
    if (cpu) {
      out.push(
        `CPU profile of the worker process (${cpu.durableSteps ? `a separate durable run of ${cpu.durableSteps} steps after the timed runs, on a worker with V8's profiler on` : '`--profile`, during the timed runs'}; ${cpu.files.length} thread profile(s) in \`${cpu.files[0]?.split('/')[0] ?? 'profile'}/\`, not committed): ` +
          `${n((cpu.sampledMs - cpu.idleMs) / 1000)} s busy of ${n(cpu.sampledMs / 1000)} s sampled. Self time by module and the busiest functions:`,
      );
      out.push('');
      out.push(
        table(
          ['module', 'self time', 'share of busy'],
          cpu.byModule.slice(0, 15).map((row) => [`\`${row.module}\``, `${n(row.selfMs, 0)} ms`, pct(row.share)]),
        ),
      );
      out.push('');
      out.push(
        table(
          ['function', 'where', 'self time', 'share of busy'],
          cpu.topFunctions.map((row) => [`\`${row.function}\``, row.where, `${n(row.selfMs, 0)} ms`, pct(row.share)]),
        ),
      );
      out.push('');
    }
  }

  const h = results.history;
  if (h) {
    out.push('## 2. History per step');
    out.push('');
    out.push(
      'One operation per point; events and encoded (protobuf) bytes over the whole run chain, continue-as-new followed. ' +
        '"Excluding content" subtracts the bytes of message content inside the payloads (goal, system prompt, replies, tool inputs and outputs). ' +
        '"Marginal" is what the steps between the previous point and this one added, per step; "steps\' own" counts only activity and workflow-task events ' +
        "(each run's first workflow task belongs to its start).",
    );
    out.push('');
    out.push(
      table(
        [
          'steps',
          'runs',
          'events',
          'bytes',
          'events / step',
          "marginal events / step (steps' own)",
          'bytes / step',
          'bytes / step excl. content',
          'marginal bytes / step',
          'wall',
        ],
        h.points.map((p) => [
          p.steps,
          p.runs,
          n(p.events, 0),
          n(p.bytes, 0),
          n(p.eventsPerStep, 2),
          p.marginalEventsPerStep === null
            ? '–'
            : `${n(p.marginalEventsPerStep, 2)} (${n(p.marginalStepEventsPerStep ?? Number.NaN, 2)})`,
          n(p.bytesPerStep, 0),
          n(p.bytesPerStepExcludingContent, 0),
          p.marginalBytesPerStep === null ? '–' : n(p.marginalBytesPerStep, 0),
          `${(p.wallMs / 1000).toFixed(1)} s`,
        ]),
      ),
    );
    out.push('');
    out.push(
      `Bytes per step: first ${n(h.bytesPerStep.first, 0)}, last ${n(h.bytesPerStep.last, 0)} (×${(h.bytesPerStep.last / h.bytesPerStep.first).toFixed(2)}); ` +
        `excluding content: first ${n(h.bytesPerStepExcludingContent.first, 0)}, last ${n(h.bytesPerStepExcludingContent.last, 0)}.`,
    );
    out.push('');
    const lastSteps = h.points[h.points.length - 1]!.steps;
    out.push(`Where the bytes go at ${lastSteps} steps (event framing included; per step):`);
    out.push('');
    out.push(
      table(
        ['event type', 'events / step', 'bytes / step'],
        h.lastPointByEventType.map((row) => [`\`${row.eventType}\``, n(row.eventsPerStep, 2), n(row.bytesPerStep, 0)]),
      ),
    );
    out.push('');
  }

  const t = results.tokens;
  if (t) {
    out.push('## 3. Tokens with long tool outputs');
    out.push('');
    out.push(
      `${t.turns} turns, each a paragraph of ${n(t.replyChars, 0)} characters and a bash command printing ${n(t.outputBytes.min / 1024, 0)}–${n(t.outputBytes.max / 1024, 0)} KiB of generated log lines ` +
        `(${n(t.outputBytes.total / 1024 / 1024, 1)} MiB in all), then a final answer; usage as the scripted server's prompt-cache simulation answered it; cost from \`common/pricing.ts\`. ` +
        `Context window ${n(t.windowTokens, 0)} tokens: the last way runs against it (a prompt over it gets the API's 400), the others without one, to show what they would cost if they could run.`,
    );
    out.push('');
    out.push(
      table(
        [
          'way',
          'requests',
          'uncached input',
          'cache write',
          'cache read',
          'output',
          'peak context',
          'peak % of window',
          'over window',
          'cache hit',
          'compactions',
          'clear batches',
          'cost',
          'wall',
        ],
        (
          [
            ['naive loop (full outputs, no breakpoints)', t.naive],
            ['loop with breakpoints, full outputs', t.cachedFullOutput],
            ['harness: spill only', t.spillOnly],
            ['harness: spill + context editing', t.spillEditing],
            ['harness: spill + editing + compaction (defaults)', t.harness],
          ] as const
        ).map(([label, w]) => [
          label,
          w.requests,
          n(w.uncachedInput, 0),
          n(w.cacheWrite, 0),
          n(w.cacheRead, 0),
          n(w.output, 0),
          n(w.peakContext, 0),
          `${n(w.peakContextPct, 1)} %`,
          w.overWindowRequests,
          pct(w.cacheHitRate),
          w.compactions,
          w.editBatches,
          `$${w.costUsd.toFixed(2)}`,
          `${(w.wallMs / 1000).toFixed(1)} s`,
        ]),
      ),
    );
    out.push('');
    out.push(
      `Uncached input, harness vs naive: ${pct(t.uncachedReduction)} lower. Prompt tokens: spilling saves ${pct(t.spillReduction)} (spill only vs cached full output), ` +
        `context editing a further ${pct(t.editingReduction)} (vs spill only). Cost of the harness: ${pct(t.costReduction.vsNaive)} lower than naive, ` +
        `${pct(t.costReduction.vsCachedFullOutput)} lower than cached full output, ${pct(t.costReduction.vsSpillOnly)} lower than spill only. ` +
        `The harness peaks at ${n(t.peakContextPct, 1)} % of the window with a cache-hit rate of ${pct(t.cacheHitRate)}.`,
    );
    out.push('');
    out.push(
      `Context editing: cache writes against tokens saved, ${t.editingSweep[0]?.turns ?? 0} turns of the same task per setting, compaction on, against the window ` +
        '(each clear batch rewrites the cache from the first cleared result on; clearing more at once breaks it less often; a compaction replaces turns by a summary):',
    );
    out.push('');
    out.push(
      table(
        [
          'setting',
          'editing',
          'clear batches',
          'compactions',
          'prompt tokens',
          'cache write',
          'cache read',
          'cache hit',
          'peak % of window',
          'cost',
        ],
        t.editingSweep.map((point) => [
          point.name,
          `\`${JSON.stringify(point.editing)}\``,
          point.editBatches,
          point.compactions,
          n(point.promptTokens, 0),
          n(point.cacheWrite, 0),
          n(point.cacheRead, 0),
          pct(point.cacheHitRate),
          `${n(point.peakContextPct, 1)} %`,
          `$${point.costUsd.toFixed(2)}`,
        ]),
      ),
    );
    out.push('');
    out.push(...notReadSection(t));
  }

  const f = results.ttft;
  if (f) {
    out.push('## 4. Time to first model request');
    out.push('');
    out.push(
      `Submit (workflow start) → the first model request at the scripted server; medians of ${f.runs} runs each (kinds alternating, after one warm-up of each).`,
    );
    out.push('');
    out.push(
      table(
        ['operation', 'TTFT median', 'samples', 'submit → second request (first tool result in)'],
        [
          ['no sandbox (no repository, no tool)', `${n(f.noSandboxMs)} ms`, f.samples.noSandbox.join(', '), '–'],
          [
            'lazy provisioning (default; repository seeded at the first tool call)',
            `${n(f.lazyMs)} ms`,
            f.samples.lazy.join(', '),
            `${n(f.lazyFirstToolRoundTripMs, 0)} ms`,
          ],
          [
            'eager provisioning (`eagerSandbox: true`, same repository)',
            `${n(f.eagerMs)} ms`,
            f.samples.eager.join(', '),
            `${n(f.eagerFirstToolRoundTripMs, 0)} ms`,
          ],
        ],
      ),
    );
    out.push('');
    out.push(
      `\`eagerSandbox: true\` without a repository creates the container before the first tool call: ${f.eagerWithoutRepoProvisions ? 'yes' : '**no**'}.`,
    );
    out.push('');
  }

  const c = results.concurrency;
  if (c) {
    out.push('## 5. Concurrency');
    out.push('');
    out.push(
      table(
        [
          'operations × steps',
          'completed',
          'failed',
          'wall',
          'steps / s',
          'operation time median / p95',
          'worker peak RSS',
          'worker event-loop delay p99 / max',
          'timeouts: activity / retried attempts / workflow task',
        ],
        [
          [
            `${c.operations} × ${c.stepsPerOperation}`,
            c.completed,
            c.failed,
            `${(c.wallMs / 1000).toFixed(1)} s`,
            n(c.stepsPerSecond, 2),
            `${(c.operationMs.median / 1000).toFixed(1)} / ${(c.operationMs.p95 / 1000).toFixed(1)} s`,
            `${n(c.workerPeakRssMb, 0)} MiB`,
            c.workerEventLoopDelayMs
              ? `${n(c.workerEventLoopDelayMs.p99, 0)} / ${n(c.workerEventLoopDelayMs.max, 0)} ms`
              : '–',
            `${c.timeouts.activity} / ${c.timeouts.retriedActivities} / ${c.timeouts.workflowTask}`,
          ],
        ],
      ),
    );
    out.push('');
    if (c.cpu) {
      out.push(
        `Where the CPU went during the run: ${n(c.cpu.machineBusyS, 0)} CPU seconds busy of ${n(c.cpu.wallS * c.cpu.cores, 0)} available ` +
          `(${c.cpu.cores} cores × ${n(c.cpu.wallS, 0)} s); dockerd and containerd serve every user of the Docker engine.`,
      );
      out.push('');
      out.push(
        table(
          ['process', 'CPU seconds', 'share of the busy machine'],
          c.cpu.byGroup.map((row) => [row.label, n(row.cpuS, 1), pct(row.shareOfMachine)]),
        ),
      );
      out.push('');
    }
    const main = c.workerMainThread;
    if (main) {
      const wallS = c.wallMs / 1000;
      out.push(
        `The worker's main thread (JavaScript: activity code, the SDK's side of workflow tasks and its calls into its core; the workflow code itself runs on the SDK's workflow thread) was on a core ${n(main.onCpuS, 1)} s of the run's ${n(wallS, 1)} s ` +
          `and runnable but waiting for a core ${n(main.waitingS, 1)} s: it had work ${pct((main.onCpuS + main.waitingS) / wallS)} of the run, ` +
          `and ${pct(main.waitingS / Math.max(main.onCpuS + main.waitingS, 1e-9))} of that time it waited for a core.`,
      );
      out.push('');
    }
    const wm = c.workerMetrics;
    if (wm) {
      const steps = c.completed * c.stepsPerOperation;
      const perStep = (count: number) => n(count / Math.max(steps, 1), 2);
      out.push(
        `The worker's side under this load (SDK metrics over the run): ${perStep(wm.activities)} activities and ${perStep(wm.workflowTasks)} workflow tasks per step; ` +
          `on average an activity took ${wm.activityExecutionMs !== undefined ? `${n(wm.activityExecutionMs, 0)} ms` : '–'} from its start in the worker to its result and a workflow task ${n(wm.workflowTaskExecutionMs, 1)} ms; ` +
          `${perStep(wm.heartbeatCalls)} heartbeat calls per step (${wm.heartbeatCalls} in all, each a write on the server): an activity that runs past half a second heartbeats (activities/heartbeat.ts), so a slower step writes more.`,
      );
      out.push('');
    }
  }

  const r = results.recovery;
  if (r) {
    out.push('## 6. Recovery from a killed worker');
    out.push('');
    out.push(
      'The worker process (brain + hands, default settings) that ran the operation so far is SIGKILLed in the middle of a call while a second worker process stands by on the same queues. ' +
        'During a tool call: a bash command that wrote a side effect and waits (it is let go right after the kill); progress is the next model request. ' +
        'During a model call: the scripted model holds the answer; progress is the retried model request.',
    );
    out.push('');
    const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    out.push(
      table(
        [
          'killed during',
          'kill → progress',
          'completed',
          'last heartbeat → kill',
          'kill → retry started',
          'kill → call completed',
          'attempts',
          'tool result',
          'command ran',
          'heartbeat timeout',
        ],
        [r.tool, r.model].map((m) => [
          `a ${m.during} call`,
          `**${sec(m.killToProgressMs)}**`,
          m.completed ? 'yes' : 'no',
          m.lastHeartbeatBeforeKillMs === undefined ? '–' : sec(m.lastHeartbeatBeforeKillMs),
          m.killToRetryStartedMs === undefined ? '–' : sec(m.killToRetryStartedMs),
          sec(m.killToActivityCompletedMs),
          m.attempts,
          m.toolResult,
          m.effects === null ? '–' : `${m.effects}×`,
          sec(m.heartbeatTimeoutMs),
        ]),
      ),
    );
    out.push('');
  }

  const e = results.environment;
  if (e) out.push(...environmentSection(e));
  if (results.cluster) out.push(...clusterSection(results.cluster));
  if (results.continue) out.push(...continueSection(results.continue));

  if (results.notes.length) {
    out.push('## Notes');
    out.push('');
    for (const note of results.notes) out.push(`- ${note}`);
    out.push('');
  }
  out.push('## Reproduce');
  out.push('');
  out.push(
    '```sh\nnpm run docker:ensure && npm run sandbox:build   # once\nnpm run bench              # the full run (this report)\nnpm run bench -- --quick   # the same scenarios, small (about 6 min)\nnpm run bench -- --only overhead --profile   # with a CPU profile of the worker\n```',
  );
  out.push('');
  return out.join('\n');
}

const CAUSES = [
  ['tail', 'new tail'],
  ['start', 'cold start'],
  ['compaction', 'compaction'],
  ['clearBatch', 'clear batches'],
  ['missed', 'sent before, not read'],
  ['changed', 'other changes'],
] as const;

const causeCells = (causes: CacheWriteCauses): string[] => CAUSES.map(([key]) => n(causes[key], 0));

/** Where the tokens not read from the cache came from, per way and per request of the harness way. */
function notReadSection(t: NonNullable<BenchResults['tokens']>): string[] {
  const out: string[] = [
    'Prompt tokens not read from the cache, by cause (`bench/cache-writes.ts`): the new tail (the last reply and the tool results after it, written once whatever the harness does), the prefix a request starts from when nothing of it was sent before (a new conversation, a cold cache, another model), and content sent again — by compaction (the summary call and the first request after it), by clear batches (the prefix after the first cleared result), sent before in exactly that prefix but not read (a breakpoint moved, past the lookback, expired), or changed otherwise (system prompt, tools):',
    '',
  ];
  const ways = [
    ['naive loop', t.naive],
    ['loop with breakpoints', t.cachedFullOutput],
    ['spill only', t.spillOnly],
    ['spill + editing', t.spillEditing],
    ['harness (defaults)', t.harness],
    ...t.editingSweep.map((point) => [`sweep: ${point.name}`, point] as const),
  ] as const;
  out.push(
    table(
      ['run', ...CAUSES.map(([, label]) => label), 'cache hit'],
      ways.map(([label, w]) => [label, ...causeCells(w.notRead), pct(w.cacheHitRate)]),
    ),
  );
  out.push('');
  const again = t.harnessRequests.filter((row) => row.kind !== 'turn' || row.start + row.missed + row.changed > 0);
  out.push(
    `The harness way's requests that sent content again (${again.length} of ${t.harnessRequests.length}; every other request read its whole prefix and wrote only its tail):`,
  );
  out.push('');
  out.push(
    table(
      [
        'request',
        'what',
        'prompt',
        'cache read',
        'cache write',
        'new tail',
        'cold start',
        'sent before, not read',
        'changed',
      ],
      again.map((row) => [
        row.index,
        row.label,
        n(row.prompt, 0),
        n(row.cacheRead, 0),
        n(row.cacheWrite, 0),
        n(row.tail, 0),
        n(row.start, 0),
        n(row.missed, 0),
        n(row.changed, 0),
      ]),
    ),
  );
  out.push('');
  return out;
}

function continueSection(c: NonNullable<BenchResults['continue']>): string[] {
  const ways = [
    ['resume: the transcript carried, context management off, no window', c.resume],
    ['resume + compaction: the same, the harness managing the context, against the window', c.resumeCompaction],
    ['handoff: a coding task, one fresh operation per feature', c.handoff],
  ] as const;
  const sw = c.modelSwitch;
  const switchRow = (label: string, s: NonNullable<BenchResults['continue']>['modelSwitch']['boundary']) => [
    label,
    n(s.promptTokens, 0),
    `${n(s.sameModel.cacheRead, 0)} read, ${n(s.sameModel.cacheWrite, 0)} written: $${s.sameModel.costUsd.toFixed(4)}`,
    `${n(s.otherModel.cacheRead, 0)} read, ${n(s.otherModel.cacheWrite, 0)} written: $${s.otherModel.costUsd.toFixed(4)}`,
    `$${s.extraUsd.toFixed(4)}`,
  ];
  return [
    '## 9. Continuing the work: handoff against resuming the transcript',
    '',
    `Seed 000: a project of ${c.features} features (a module, its test and a page of notes each, ${n(c.docBytes / 1000, 0)} kB); one agent did the first ${c.firstHalf} in one conversation, ` +
      `and the remaining ${c.features - c.firstHalf} are done three ways with the same nine turns per feature (read its notes and those of the feature before, read the modules it builds on, write the module and its test, run the tests, fix, run them again, commit; replies of ${n(c.replyChars, 0)} characters). ` +
      `Resuming takes over a conversation of ${n(c.takenOverTokens, 0)} tokens, which ends at ${n(c.transcriptTokens, 0)}; the window is ${n(c.windowTokens, 0)}. ` +
      "Only the continuation is counted, from a cold cache (the first half ran long enough ago); usage as the scripted server's prompt-cache simulation answered it, cost from `common/pricing.ts`.",
    '',
    table(
      [
        'way',
        'operations',
        'requests',
        'uncached input',
        'cache write',
        'cache read',
        'output',
        'prompt tokens',
        'peak context',
        'cache hit',
        'compactions',
        'clear batches',
        'cost',
        'wall',
      ],
      ways.map(([label, w]) => [
        label,
        w.operations,
        w.requests,
        n(w.uncachedInput, 0),
        n(w.cacheWrite, 0),
        n(w.cacheRead, 0),
        n(w.output, 0),
        n(w.promptTokens, 0),
        `${n(w.peakContext, 0)} (${n(w.peakContextPct, 1)} %)`,
        pct(w.cacheHitRate),
        w.compactions,
        w.editBatches,
        `$${w.costUsd.toFixed(2)}`,
        `${(w.wallMs / 1000).toFixed(1)} s`,
      ]),
    ),
    '',
    `Handoff ÷ resume: ${pct(c.handoffVsResume.cost)} of the cost, ${pct(c.handoffVsResume.promptTokens)} of the prompt tokens; ` +
      `handoff ÷ resume + compaction: ${pct(c.handoffVsResumeCompaction.cost)} of the cost, ${pct(c.handoffVsResumeCompaction.promptTokens)} of the prompt tokens. ` +
      `Wall: the resume way's ${(c.resume.wallMs / 1000).toFixed(0)} s against the handoff's ${(c.handoff.wallMs / 1000).toFixed(0)} s (the handoff also verifies, commits and pushes every feature on the host).`,
    '',
    'Prompt tokens not read from the cache, by cause (as in section 3):',
    '',
    table(
      ['way', ...CAUSES.map(([, label]) => label)],
      ways.map(([label, w]) => [label.split(':')[0]!, ...causeCells(w.notRead)]),
    ),
    '',
    `A model switch (to \`${sw.toModel}\`, priced like the bench's model): one request on the same model against the same request on the other, whose cache holds nothing of it.`,
    '',
    table(
      ['where', 'prompt tokens', 'same model', 'other model', 'the switch costs'],
      [
        switchRow("at an operation boundary (a fresh context like a feature operation's first request)", sw.boundary),
        switchRow("inside the long context (the resumed lane's next request)", sw.inside),
      ],
    ),
    '',
  ];
}

function floorSection(floor: NonNullable<BenchResults['floor']>, results: BenchResults): string[] {
  const c = results.concurrency;
  const cpu = results.cpu?.msPerStep;
  const rows: (string | number)[][] = [
    [
      `one workflow at a time (${floor.runs} × ${floor.stepsPerRun} steps)`,
      `**${n(floor.msPerStep, 1)} ms** per step (p95 ${n(floor.p95Ms, 1)} ms)`,
      results.overhead
        ? `${n(results.overhead.latency0.durableMsPerStep, 1)} ms per step at model latency 0 (×${n(results.overhead.latency0.durableMsPerStep / floor.msPerStep, 2)}); added over the plain loop ${n(results.overhead.latency0.addedMsPerStep, 1)} ms (×${n(results.overhead.latency0.addedMsPerStep / floor.msPerStep, 2)})`
        : '–',
    ],
    ...(floor.atModelLatency
      ? [
          [
            `one workflow at a time, model latency ${floor.atModelLatency.latencyMs} ms (${floor.atModelLatency.samples} steps)`,
            `**${n(floor.atModelLatency.addedMsPerStep, 1)} ms** per step beyond the latency (p95 ${n(floor.atModelLatency.p95AddedMs, 1)} ms)`,
            results.overhead
              ? `added over the plain loop ${n(results.overhead.latency200.addedMsPerStep, 1)} ms (×${n(results.overhead.latency200.addedMsPerStep / floor.atModelLatency.addedMsPerStep, 2)})`
              : '–',
          ],
        ]
      : []),
    [
      `${floor.workflows} × ${floor.stepsPerWorkflow} steps at once`,
      `**${n(floor.stepsPerSecond, 1)} steps/s**`,
      c ? `${n(c.stepsPerSecond, 1)} steps/s (${pct(c.stepsPerSecond / floor.stepsPerSecond)} of the floor)` : '–',
    ],
  ];
  const longest = results.history?.points.at(-1);
  if (floor.historyBytesPerStep)
    rows.push([
      'history per step (one workflow at a time)',
      `${n(floor.historyBytesPerStep, 0)} B`,
      longest
        ? `${n(longest.bytesPerStepExcludingContent, 0)} B excluding content at ${longest.steps} steps (×${n(longest.bytesPerStepExcludingContent / floor.historyBytesPerStep, 2)})`
        : '–',
    ]);
  if (floor.cpuMsPerStep)
    rows.push([
      'CPU per step at once (machine / worker / server)',
      `${n(floor.cpuMsPerStep.total, 1)} / ${n(floor.cpuMsPerStep.worker, 1)} / ${n(floor.cpuMsPerStep.server, 1)} ms`,
      cpu
        ? `${n(cpu.total, 1)} / ${n(cpu.worker, 1)} / ${n(cpu.server, 1)} ms, and ${n(cpu.containers, 1)} ms in the operations' containers` +
          (cpu.containersInside !== undefined && cpu.containerShims !== undefined
            ? ` (${n(cpu.containersInside, 1)} inside them, ${n(cpu.containerShims, 1)} in their shims and runc)`
            : '')
        : '–',
    ]);
  return [
    "## 0. Temporal's floor",
    '',
    "What Temporal itself costs for the harness's step shape, on the same server, worker settings and queues, in the same run: " +
      'a workflow whose every step is one no-op activity on a brain queue and one on a hands queue (`bench/floor/workflow.ts`). ' +
      'Absolute times differ about threefold between machines of the same kind; the ratios to the floor do not.',
    '',
    table(['', 'floor', 'the harness'], rows),
    '',
  ];
}

function environmentSection(e: NonNullable<BenchResults['environment']>): string[] {
  const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const mib = (bytes: number) => `${n(bytes / 2 ** 20, 0)} MiB`;
  return [
    '## 7. Environments',
    '',
    "Operations on `examples/calculator` whose one tool call is `bash: true`; the workspace's environment is prepared at that first tool call, " +
      `so the start is submit → the second model request (the tool's result is in). The scripted model answers at once (latency ${e.modelLatencyMs} ms): the figures are the harness's own time. ` +
      `Environment of the cold and warm runs: \`${JSON.stringify(e.spec)}\` — the cold runs' marker is their run id, so each one's content hash is new and its image is built; the warm runs' is a fixed word.`,
    '',
    `Cold build (${e.coldRuns} run${e.coldRuns === 1 ? '' : 's'}, medians): preparing the environment (\`prepareEnvironment\`, scheduled → completed) **${sec(e.coldBuildMs)}** ` +
      `(samples ${e.coldSamples.map(sec).join(', ')}), of which the builder (build container → committed image) ${sec(e.coldBuilderMs)}; ` +
      `submit → first tool result in ${sec(e.coldStartMs)}. The image: ${mib(e.coldImageBytes)} (the default image: ${mib(e.defaultImageBytes)}). ` +
      `The first cold build's steps, timed from the operation's live progress events (sent in batches every second, so ±1 s each; before the first step, ${sec(e.coldBuildLeadMs)} went to resolving the recipe, probing the base image and starting the build container; ` +
      'the last step runs to the end of the preparation, committing the image and recording it on the workspace included):',
    '',
    table(
      ['step', 'what', 'time'],
      e.coldBuildSteps.map((step) => [step.step, step.title.replace(/\|/g, '\\|'), sec(step.ms)]),
    ),
    '',
    `Warm start: the environment's image \`${e.warmImage}\` (${e.warmImageBuiltByRun ? 'built by the warm-up run' : 'there before the run'}) against \`environment: "default"\`, ` +
      `${e.warmRuns} runs each, kinds alternating after one warm-up of each:`,
    '',
    table(
      ['operation', 'submit → first tool result in (median)', 'preparing the environment (median)', 'samples'],
      [
        [
          'default image (`environment: "default"`)',
          `${n(e.defaultStartMs, 0)} ms`,
          `${n(e.prepareMs.default, 0)} ms`,
          e.samples.default.join(', '),
        ],
        [
          'cached environment (image exists)',
          `${n(e.warmStartMs, 0)} ms`,
          `${n(e.prepareMs.warm, 0)} ms`,
          e.samples.warm.join(', '),
        ],
      ],
    ),
    '',
    `Warm / default: ×${n(e.warmStartRatio, 3)}.`,
    '',
  ];
}

function clusterSection(c: NonNullable<BenchResults['cluster']>): string[] {
  const row = (label: string, side: NonNullable<BenchResults['cluster']>['devServer']) => [
    label,
    `${side.completed} / ${c.operations}`,
    `${(side.wallMs / 1000).toFixed(1)} s`,
    n(side.stepsPerSecond, 2),
    `${(side.operationMs.median / 1000).toFixed(1)} / ${(side.operationMs.p95 / 1000).toFixed(1)} s`,
    side.workers.map((w) => `${w.role} ${n(w.peakRssMb, 0)} MiB`).join(', '),
    Object.keys(side.hosts).length
      ? Object.entries(side.hosts)
          .map(([host, count]) => `${host} ${count}`)
          .join(', ')
      : '–',
  ];
  return [
    '## 8. On a Temporal cluster',
    '',
    `The concurrency load (${c.operations} operations × ${c.stepsPerOperation} steps of a model call and \`bash: true\`, model latency 0, started at once) ` +
      "run twice in the same run: on the bench's dev server with one worker process (brain and hands, as `agent worker dev`), and on the cluster of " +
      `\`npm run cluster\` (four services in four processes, PostgreSQL, ${c.shards} history shards) with two brain worker processes and two hands hosts — ` +
      'host-a on the default Docker engine, host-b on a second `dockerd` — polling one shared hands queue (`bench/scenarios/cluster.ts`). ' +
      'All of it on this one machine: the cluster shares its cores with the workers, the containers and PostgreSQL.',
    '',
    table(
      [
        'server',
        'completed',
        'wall',
        'steps / s',
        'operation time median / p95',
        'worker peak RSS',
        'operations per hands host',
      ],
      [row('dev server, one worker process', c.devServer), row('cluster, 2 brain + 2 hands processes', c.cluster)],
    ),
    '',
  ];
}
