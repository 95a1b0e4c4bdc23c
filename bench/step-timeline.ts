/**
 * Where a durable step's time goes: from an operation's history, the median time of each hand-off
 * over its steps — workflow tasks (scheduled → started → completed), the model step and the tool
 * call (scheduled → started → completed), and an activity's completion → the workflow task it
 * causes. Event times are the server's, so the figures include the server's own work.
 */
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { MODEL_STEP_ACTIVITY } from '../common/model-step';
import type { StepTimeline } from './results';
import { median, round } from './stats';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export function stepTimeline(events: readonly HistoryEvent[]): StepTimeline {
  const at = (event: HistoryEvent | undefined): number => (event?.eventTime ? tsToMs(event.eventTime) : Number.NaN);
  const byId = new Map(events.map((event) => [String(event.eventId), event]));
  const spans: Record<keyof StepTimeline, number[]> = {
    workflowTaskScheduleToStartMs: [],
    workflowTaskStartToCompleteMs: [],
    modelScheduleToStartMs: [],
    modelStartToCloseMs: [],
    toolScheduleToStartMs: [],
    toolStartToCloseMs: [],
    completedToWorkflowTaskMs: [],
  };
  events.forEach((event, index) => {
    const wftStarted = event.workflowTaskStartedEventAttributes;
    if (wftStarted)
      spans.workflowTaskScheduleToStartMs.push(at(event) - at(byId.get(String(wftStarted.scheduledEventId))));
    const wftCompleted = event.workflowTaskCompletedEventAttributes;
    if (wftCompleted)
      spans.workflowTaskStartToCompleteMs.push(at(event) - at(byId.get(String(wftCompleted.startedEventId))));
    const completed = event.activityTaskCompletedEventAttributes;
    if (!completed) return;
    const scheduled = byId.get(String(completed.scheduledEventId));
    const started = byId.get(String(completed.startedEventId));
    const model = scheduled?.activityTaskScheduledEventAttributes?.activityType?.name === MODEL_STEP_ACTIVITY;
    (model ? spans.modelScheduleToStartMs : spans.toolScheduleToStartMs).push(at(started) - at(scheduled));
    (model ? spans.modelStartToCloseMs : spans.toolStartToCloseMs).push(at(event) - at(started));
    const next = events[index + 1];
    if (next?.workflowTaskScheduledEventAttributes) spans.completedToWorkflowTaskMs.push(at(next) - at(event));
  });
  return Object.fromEntries(Object.entries(spans).map(([key, values]) => [key, round(median(values))])) as StepTimeline;
}
