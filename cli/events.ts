/**
 * `agent events <sessionId|operationId>`: the typed session log (`client/session-events.ts`), one
 * line per event or one JSON object per line; `--follow` keeps printing as events are recorded and,
 * outside `--json`, shows the model's text live as it streams.
 */
import type { Client } from '@temporalio/client';
import { HistoryReader } from '../client/histories';
import { LiveTranscript, liveEvents } from '../client/live';
import { connectClient } from '../client/connection';
import { eventSourceOf, getEvents } from '../client/session-events';
import { matchesFilter, unknownEventType, type EventFilter, type SessionEvent } from '../common/events';
import type { EventsCommand } from './command-types';
import { cliSettings } from './settings';

const FOLLOW_INTERVAL_MS = 500;

export async function eventsCommand(command: EventsCommand): Promise<number> {
  for (const type of command.types ?? []) {
    const problem = unknownEventType(type);
    if (problem) throw new Error(`--type: ${problem}`);
  }
  const { client, connection } = await connectClient(cliSettings().temporal);
  try {
    const reader = new HistoryReader(client);
    const source = await eventSourceOf(reader, command.id);
    if (!source) throw new Error(`no session or operation ${command.id}`);
    const filter: EventFilter = {
      ...(command.from !== undefined ? { from: command.from } : {}),
      ...(command.to !== undefined ? { to: command.to } : {}),
      ...(command.types ? { types: command.types } : {}),
      ...(command.lane ? { lane: command.lane } : {}),
    };
    if (!command.follow) {
      const { events } = await getEvents(client, source, {}, reader);
      if (command.lane && !events.some((event) => event.lane === command.lane)) {
        const lanes = [...new Set(events.map((event) => event.lane).filter(Boolean))].join(', ');
        throw new Error(`--lane: ${command.id} has no lane ${command.lane} (lanes: ${lanes || 'none'})`);
      }
      for (const event of events.filter((e) => matchesFilter(e, filter))) {
        console.log(command.json ? JSON.stringify(event) : formatEvent(event));
      }
      return 0;
    }
    await follow(client, command, source, filter, reader);
    return 0;
  } finally {
    await connection.close();
  }
}

/** Prints events as they are recorded (and live text outside --json) until the source closes or Ctrl-C. */
async function follow(
  client: Client,
  command: EventsCommand,
  source: NonNullable<Awaited<ReturnType<typeof eventSourceOf>>>,
  filter: EventFilter,
  reader: HistoryReader,
): Promise<void> {
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  const printed = new Set<string>();
  const live = new Map<string, Promise<void>>();
  const transcript = new LiveTranscript({ operationLabel: (id) => `[${id}]` });
  for (;;) {
    const { events, open } = await getEvents(client, source, filter, reader);
    for (const event of events) {
      const key = `${event.type}|${event.operationId}|${event.at}|${JSON.stringify(event.data).slice(0, 200)}`;
      if (printed.has(key)) continue;
      printed.add(key);
      if (command.json) console.log(JSON.stringify(event));
      else if (event.type !== 'model.reply' || !live.has(event.operationId ?? '')) console.log(formatEvent(event));
      if (!command.json && event.type === 'operation.started' && event.operationId && !live.has(event.operationId)) {
        live.set(event.operationId, printLiveText(client, event.operationId, transcript, stop.signal));
      }
    }
    if (!open || stop.signal.aborted) break;
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_INTERVAL_MS));
  }
  stop.abort();
  await Promise.all(live.values());
}

/** The model's text as it streams (tool and other events come from the log itself). */
async function printLiveText(
  client: Client,
  operationId: string,
  transcript: LiveTranscript,
  signal: AbortSignal,
): Promise<void> {
  try {
    for await (const event of liveEvents(client, operationId, { signal })) {
      if (event.kind !== 'model.delta' && event.kind !== 'model.reply') continue;
      for (const piece of transcript.accept(event)) if ('text' in piece) process.stdout.write(piece.text);
    }
  } catch {
    // Live text is a convenience: the log has every reply.
  }
}

export function formatEvent(event: SessionEvent): string {
  const time = event.at.slice(11, 19);
  const where = [event.lane ?? 'session', event.operationId, event.turn ? `turn ${event.turn}` : '']
    .filter(Boolean)
    .join(' ');
  return `#${event.seq} ${time} ${event.type.padEnd(18)} ${where} · ${describe(event)}`;
}

function describe(event: SessionEvent): string {
  const d = event.data as Record<string, string | number | boolean | undefined>;
  switch (event.type) {
    case 'prompt.accepted':
      return `${d.state}${d.position ? ` #${d.position}` : ''}: ${short(String(d.prompt))}`;
    case 'operation.started':
      return short(String(d.goal)) + (d.continues ? ` (continues ${d.continues})` : '');
    case 'model.reply':
      return `${d.stopReason} · ${d.tokens} tokens${d.text ? ` · ${short(String(d.text))}` : ''}`;
    case 'context.compacted':
      return `compaction ${d.compaction} (${d.reason}) · ${d.tokensBefore} → ${d.tokensAfter} tokens · ${short(String(d.summary))}`;
    case 'tool.started':
      return String(d.summary);
    case 'tool.finished':
      return `${d.isError ? '✗' : '✓'} ${d.name}${d.excerpt ? `: ${short(String(d.excerpt))}` : ''}`;
    case 'steering.accepted':
      return short(String(d.text));
    case 'abort.accepted':
      return String(d.reason);
    case 'approval.requested':
      return `${d.toolCallId} ${d.summary} (denied at ${d.timeoutAt} unless decided)`;
    case 'approval.decided':
      return `${d.toolCallId} ${d.decision} by ${d.by}${d.reason ? `: ${d.reason}` : ''}`;
    case 'hook.decided':
      return `${d.event} ${d.decision}${d.toolCallId ? ` ${d.toolCallId}` : ''} · ${d.hook}${d.reason ? `: ${short(String(d.reason))}` : ''}${d.error ? ` (failed: ${short(String(d.error))})` : ''}`;
    case 'fact.set':
      return `${d.key} = ${short(String(d.value))}`;
    case 'lane.forked':
      return `${d.lane} from ${d.parentLane} (${d.toolCallId}): ${short(String(d.description))}`;
    case 'operation.ended':
      return `${d.state}: ${d.reason}${d.turns !== undefined ? ` · ${d.turns} turns · ${d.tokens} tokens` : ''}`;
  }
}

function short(text: string, max = 100): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}
