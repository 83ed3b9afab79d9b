/**
 * bench:cost splits the server's action counter by loop from the runs' histories. These cases pin the counting
 * rules to the server's (its frontend's telemetry interceptor, temporal 1.29.1): markers once per workflow task,
 * a child workflow twice, no start for a child or a continued run, retries from the attempt, and no action for
 * the server's own refresh signal to a schedule's workflow.
 */
import { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { actionsOf, scrapeActions } from '../../bench/cost-history';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const T = temporal.api.enums.v1.EventType;
type Event = temporal.api.history.v1.IHistoryEvent;

/** An event as the server sends it (fromObject makes the 64-bit ids and times Longs). */
const ev = (eventId: number, eventType: number, extra: Record<string, unknown> = {}, s = 100): Event =>
  temporal.api.history.v1.HistoryEvent.fromObject({ eventId, eventType, eventTime: { seconds: s, nanos: 0 }, ...extra });

describe('actionsOf', () => {
  it('counts a scheduled run as the server meters it', () => {
    const events = [
      ev(1, T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, { workflowExecutionStartedEventAttributes: {} }),
      ev(4, T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
      ev(5, T.EVENT_TYPE_MARKER_RECORDED, { markerRecordedEventAttributes: { workflowTaskCompletedEventId: 4 } }),
      ev(6, T.EVENT_TYPE_MARKER_RECORDED, { markerRecordedEventAttributes: { workflowTaskCompletedEventId: 4 } }),
      ev(7, T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED),
      ev(8, T.EVENT_TYPE_ACTIVITY_TASK_STARTED, { activityTaskStartedEventAttributes: { attempt: 3 } }),
      ev(12, T.EVENT_TYPE_MARKER_RECORDED, { markerRecordedEventAttributes: { workflowTaskCompletedEventId: 11 } }),
      ev(13, T.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED),
      ev(14, T.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES),
    ];
    expect(Object.fromEntries(actionsOf(events))).toEqual({
      StartWorkflowExecution: 1,
      BatchMarkers: 2,
      ScheduleActivityTask: 1,
      activity_retry: 2,
      StartChildWorkflowExecution: 1,
      StartChildWorkflowExecution_Extra: 1,
      UpsertWorkflowSearchAttributes: 1,
    });
  });

  it('counts no start for a child or a continued run, and no refresh signal; a client signal counts', () => {
    const events = [
      ev(1, T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, {
        workflowExecutionStartedEventAttributes: { parentWorkflowExecution: { workflowId: 'p' } },
      }),
      ev(2, T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, { workflowExecutionStartedEventAttributes: { continuedExecutionRunId: 'r' } }),
      ev(3, T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, {
        workflowExecutionSignaledEventAttributes: { signalName: 'refresh', identity: 'internal refresh from describe request' },
      }),
      ev(4, T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, {
        workflowExecutionSignaledEventAttributes: { signalName: 'patch', identity: 'keeper' },
      }),
      ev(5, T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, {
        workflowExecutionSignaledEventAttributes: { externalWorkflowExecution: { workflowId: 'w' } },
      }),
    ];
    expect(Object.fromEntries(actionsOf(events))).toEqual({ SignalWorkflowExecution: 1 });
  });

  it('counts a run started by signal-with-start once, as the frontend meters that request; later signals count', () => {
    const signal = (id: number, s = 100) =>
      ev(
        id,
        T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
        { workflowExecutionSignaledEventAttributes: { signalName: 'moreEvents', identity: 'keeper' } },
        s,
      );
    const events = [
      ev(1, T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, { workflowExecutionStartedEventAttributes: {} }),
      signal(2),
      signal(6, 101),
    ];
    expect(Object.fromEntries(actionsOf(events))).toEqual({ SignalWithStartWorkflowExecution: 1, SignalWorkflowExecution: 1 });
  });

  it('keeps only the events of the time range asked for', () => {
    const events = [
      ev(1, T.EVENT_TYPE_TIMER_STARTED, {}, 10),
      ev(2, T.EVENT_TYPE_TIMER_STARTED, {}, 20),
      ev(3, T.EVENT_TYPE_TIMER_STARTED, {}, 30),
    ];
    expect(Object.fromEntries(actionsOf(events, 20_000, 30_000))).toEqual({ StartTimer: 1 });
  });
});

describe('scrapeActions', () => {
  // The body is the dev server's own exposition format (lines as a scrape of temporal 1.5.1's /metrics gave them),
  // served from loopback: what is tested is the parsing; bench:cost scrapes the real server.
  it('sums the action counter of the namespace by type, prefixes dropped', async () => {
    const body = [
      '# TYPE action counter',
      'action{action_type="grpc_StartWorkflowExecution",namespace="default",operation="StartWorkflowExecution",service_name="frontend"} 3',
      'action{action_type="command_ScheduleActivityTask",namespace="default",operation="RespondWorkflowTaskCompleted",service_name="frontend"} 7',
      'action{action_type="grpc_StartWorkflowExecution",namespace="temporal_system",operation="StartWorkflowExecution",service_name="frontend"} 2',
      'action_other{namespace="default"} 9',
    ].join('\n');
    const server = http.createServer((_req, res) => res.end(body));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
      expect(Object.fromEntries(await scrapeActions(url))).toEqual({ StartWorkflowExecution: 3, ScheduleActivityTask: 7 });
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
