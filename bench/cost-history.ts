/**
 * What bench:cost reads from the server: the dev server's `action` counter (scraped from its /metrics), and each
 * run's history, from which the actions and bytes are attributed to keeper's loops.
 *
 * The counter is the server's own meter (its frontend's telemetry interceptor): one per workflow started by a
 * client or a schedule, per activity scheduled, timer, search-attribute upsert, memo change, child workflow (two),
 * signal, heartbeat, schedule patch, activity retry, and one per workflow task completion that carries any
 * markers (local activities, side effects, patches: `BatchMarkers`). It carries no workflow type, so the split by
 * loop is made here from the histories with the same rules; what the histories cannot show (heartbeats, queries,
 * schedule patches) is the difference between the two totals.
 */
import { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

export type Counts = Map<string, number>;

export function add(into: Counts, key: string, n = 1): void {
  into.set(key, (into.get(key) ?? 0) + n);
}

export function total(c: Counts): number {
  let n = 0;
  for (const v of c.values()) n += v;
  return n;
}

/** The `action` counter of namespace `namespace` by action type (`grpc_`/`command_` prefixes dropped). */
export async function scrapeActions(metricsUrl: string, namespace = 'default'): Promise<Counts> {
  const res = await fetch(metricsUrl);
  if (!res.ok) throw new Error(`${metricsUrl} answered ${res.status}`);
  const out: Counts = new Map();
  for (const line of (await res.text()).split('\n')) {
    const m = /^action\{([^}]*)\}\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.namespace !== namespace) continue;
    add(out, (labels.action_type ?? '?').replace(/^(grpc|command)_/, ''), Number(m[2]));
  }
  return out;
}

export function difference(after: Counts, before: Counts): Counts {
  const out: Counts = new Map();
  for (const [k, v] of after) if (v - (before.get(k) ?? 0) !== 0) out.set(k, v - (before.get(k) ?? 0));
  return out;
}

const ACTION_OF_EVENT: Partial<Record<number, string>> = {
  [EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]: 'ScheduleActivityTask',
  [EventType.EVENT_TYPE_TIMER_STARTED]: 'StartTimer',
  [EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES]: 'UpsertWorkflowSearchAttributes',
  [EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED]: 'ModifyWorkflowProperties',
  [EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED]: 'SignalExternalWorkflowExecution',
  [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW]: 'ContinueAsNewWorkflowExecution',
};

/**
 * The actions a history's events stand for, by the server's rules (see the file comment). `from`/`to` (ms)
 * keep only events in that time range, for a long-lived workflow (a schedule's) read across a window.
 */
export function actionsOf(events: HistoryEvent[], from = -Infinity, to = Infinity): Counts {
  const out: Counts = new Map();
  const markerTasks = new Set<string>();
  const withStart = signalOfSignalWithStart(events);
  for (const e of events) {
    if (e === withStart) continue; // metered with the start, as one SignalWithStartWorkflowExecution
    const at = eventTimeMs(e);
    if (at < from || at >= to) continue;
    const type = e.eventType ?? 0;
    const simple = ACTION_OF_EVENT[type];
    if (simple) add(out, simple);
    else if (type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) {
      const a = e.workflowExecutionStartedEventAttributes;
      // A child's start is counted (twice) on its parent's command; a continued run on the old run's command.
      if (!a?.parentWorkflowExecution && !a?.continuedExecutionRunId)
        add(out, withStart ? 'SignalWithStartWorkflowExecution' : 'StartWorkflowExecution');
    } else if (type === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED) {
      add(out, 'StartChildWorkflowExecution');
      add(out, 'StartChildWorkflowExecution_Extra');
    } else if (type === EventType.EVENT_TYPE_MARKER_RECORDED) {
      markerTasks.add(String(e.markerRecordedEventAttributes?.workflowTaskCompletedEventId ?? e.eventId));
    } else if (type === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      const retries = (e.activityTaskStartedEventAttributes?.attempt ?? 1) - 1;
      if (retries > 0) add(out, 'activity_retry', retries);
    } else if (type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && isClientSignal(e)) {
      add(out, 'SignalWorkflowExecution'); // a client's signal (a schedule's trigger reaches its workflow so)
    }
  }
  if (markerTasks.size) add(out, 'BatchMarkers', markerTasks.size);
  return out;
}

/**
 * The signal of a run started by signal-with-start: a client's signal recorded right after the start, at the same
 * time. The frontend meters that request once (SignalWithStartWorkflowExecution), not as a start and a signal.
 */
function signalOfSignalWithStart(events: HistoryEvent[]): HistoryEvent | undefined {
  const [start, next] = events;
  const started = start?.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED;
  const signaled = next?.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && isClientSignal(next);
  return started && signaled && eventTimeMs(start) === eventTimeMs(next) ? next : undefined;
}

/**
 * A signal a client sent through the frontend (metered there). Not: one from a workflow (metered on its command),
 * nor the server's own poke of a schedule's workflow after DescribeSchedule (identity below), which is not metered.
 */
function isClientSignal(e: HistoryEvent): boolean {
  const a = e.workflowExecutionSignaledEventAttributes;
  return !a?.externalWorkflowExecution && a?.identity !== 'internal refresh from describe request';
}

export function eventTimeMs(e: HistoryEvent): number {
  const t = e.eventTime;
  return t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0;
}

/** An event's name, with the activity type for activity events: `ActivityTaskCompleted (observeHost)`. */
function eventKey(e: HistoryEvent, activityTypes: Map<string, string>): string {
  const name = EventType[e.eventType ?? 0]
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase()
    .replace(/(^|_)(\w)/g, (_, __, c: string) => c.toUpperCase());
  if (e.activityTaskScheduledEventAttributes) {
    const type = e.activityTaskScheduledEventAttributes.activityType?.name ?? '?';
    activityTypes.set(String(e.eventId), type);
    return `${name} (${type})`;
  }
  const scheduledId =
    e.activityTaskStartedEventAttributes?.scheduledEventId ??
    e.activityTaskCompletedEventAttributes?.scheduledEventId ??
    e.activityTaskFailedEventAttributes?.scheduledEventId;
  return scheduledId !== undefined && scheduledId !== null ? `${name} (${activityTypes.get(String(scheduledId)) ?? '?'})` : name;
}

export interface EventWeight {
  count: number;
  bytes: number;
}

/** Each event's encoded size, summed by event (and activity type): which events make a history heavy. */
export function weighEvents(events: HistoryEvent[], into: Map<string, EventWeight>): void {
  const activityTypes = new Map<string, string>();
  for (const e of events) {
    const key = eventKey(e, activityTypes);
    const w = into.get(key) ?? { count: 0, bytes: 0 };
    w.count += 1;
    w.bytes += temporal.api.history.v1.HistoryEvent.encode(e).finish().length;
    into.set(key, w);
  }
}
