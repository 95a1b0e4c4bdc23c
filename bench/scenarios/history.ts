/**
 * History: one operation per point (10, 100, 500 steps in the full run), each step a model call and
 * a `bash: true`; then events and bytes over the whole run chain, per step. The per-step figure must
 * stay flat as the operation grows: the workflow passes references and deltas, never the transcript.
 */
import { operationResult } from '../../client/operation-result';
import { startScriptedModelServer } from '../../scripted-model/server';
import { runId, startDurableHarness, type BenchContext } from '../context';
import { measureHistory, type HistoryMeasure } from '../history-size';
import { goalParam, markerText, stepsScript } from '../model';
import type { BenchProfile } from '../profiles';
import type { HistoryPoint, HistoryResult } from '../results';
import { round } from '../stats';

export async function runHistory(
  ctx: BenchContext,
  profile: BenchProfile['history'],
  suggestContinueAsNewEvents: number | null,
): Promise<HistoryResult> {
  const server = await startScriptedModelServer({
    script: stepsScript({
      steps: (request) => goalParam(request, 'steps') ?? 0,
      call: () => ({ name: 'bash', input: { command: 'true' } }),
    }),
  });
  const harness = await startDurableHarness(ctx, server.url, 'bench-history');
  try {
    const points: HistoryPoint[] = [];
    let lastByType: HistoryMeasure['byEventType'] = {};
    for (const steps of profile.points) {
      const id = runId('history', `${steps}`);
      const started = Date.now();
      const result = await operationResult(
        await harness.start(
          { goal: `${markerText(id)} steps=${steps}: run cheap commands`, budget: { maxTurns: steps + 1 } },
          id,
        ),
      );
      if (result.state !== 'completed') throw new Error(`history: run ${id} ended ${result.state}: ${result.reason}`);
      const wallMs = Date.now() - started;
      const measure = await measureHistory(ctx.client, id);
      lastByType = measure.byEventType;
      const previous = points[points.length - 1];
      points.push({
        steps,
        events: measure.events,
        bytes: measure.bytes,
        runs: measure.runs,
        contentBytes: measure.contentBytes,
        eventsPerStep: round(measure.events / steps, 2),
        stepEvents: measure.stepEvents,
        bytesPerStep: round(measure.bytes / steps),
        bytesPerStepExcludingContent: round((measure.bytes - measure.contentBytes) / steps),
        marginalBytesPerStep: previous ? round((measure.bytes - previous.bytes) / (steps - previous.steps)) : null,
        marginalEventsPerStep: previous
          ? round((measure.events - previous.events) / (steps - previous.steps), 2)
          : null,
        marginalStepEventsPerStep: previous
          ? round((measure.stepEvents - previous.stepEvents) / (steps - previous.steps), 2)
          : null,
        wallMs,
      });
      ctx.log(
        `history: ${steps} steps → ${measure.events} events, ${measure.bytes} bytes, ${measure.runs} run(s) (${(wallMs / 1000).toFixed(1)} s)`,
      );
    }
    const firstPoint = points[0]!;
    const lastPoint = points[points.length - 1]!;
    return {
      points,
      bytesPerStep: { first: firstPoint.bytesPerStep, last: lastPoint.bytesPerStep },
      bytesPerStepExcludingContent: {
        first: firstPoint.bytesPerStepExcludingContent,
        last: lastPoint.bytesPerStepExcludingContent,
      },
      eventsPerStep: { first: firstPoint.eventsPerStep, last: lastPoint.eventsPerStep },
      maxBytesPerStepExcludingContent: Math.max(...points.map((point) => point.bytesPerStepExcludingContent)),
      lastPointByEventType: Object.entries(lastByType)
        .map(([eventType, { events, bytes }]) => ({
          eventType,
          eventsPerStep: round(events / lastPoint.steps, 2),
          bytesPerStep: round(bytes / lastPoint.steps),
        }))
        .sort((a, b) => b.bytesPerStep - a.bytesPerStep),
      marginalEventsPerStep: lastPoint.marginalEventsPerStep,
      marginalStepEventsPerStep: lastPoint.marginalStepEventsPerStep,
      suggestContinueAsNewEvents,
    };
  } finally {
    await harness.close();
    await server.stop();
  }
}
