/**
 * What a loop's run leaves when it records its result (src/activities/loop-results.ts): the loop's last result in
 * keeper_loop_results, and what its unit (src/loops/) says that result adds to the metrics, on a meter that records
 * every call (the SDK's Prometheus exporter is tested on a real worker in test/metrics/). Real SQLite file.
 */
import type { MetricMeter, MetricTags } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { recordLoopRun } from '../../src/activities/loop-results';
import { lastLoopResult } from '../../src/db/loop-results';
import { loopNamed } from '../../src/loops/registry';
import { recordNotifications } from '../../src/host/notifications';
import { createKeeperMetrics } from '../../src/metrics';
import { memoryHost } from './world';

/** Every counter add and gauge set, as `name value {tags}`. */
function recordingMeter(): { meter: MetricMeter; calls: string[] } {
  const calls: string[] = [];
  const metric = (name: string) => {
    const record = (value: number, tags: MetricTags = {}) => calls.push(`${name} ${value} ${JSON.stringify(tags)}`);
    return { name, unit: '', description: '', add: record, set: record, record, withTags: () => metric(name) };
  };
  const meter = { createCounter: metric, createGauge: metric, createHistogram: metric, withTags: () => meter };
  return { meter: meter as unknown as MetricMeter, calls };
}

/** Records a run of `loop` as its unit's activities do: its result, and what its unit says it adds to the metrics. */
const recordRun = (deps: Parameters<typeof recordLoopRun>[0], loop: string, workflowId: string, result: unknown) =>
  recordLoopRun(deps, loop, workflowId, result, loopNamed(loop)!.metrics);

describe("a loop run's recorded result", () => {
  it("is stored as the loop's last result, and a sweep adds its removals by class, 0 included", async () => {
    const h = memoryHost();
    const { meter, calls } = recordingMeter();
    const deps = { ...h.deps, metrics: createKeeperMetrics(meter) };
    const summary = [
      { class: 'containers', planned: 2, removed: 2, failed: 0, skipped: 0 },
      { class: 'imagePulls', planned: 0, removed: 0, failed: 0, skipped: 0 },
    ];
    await recordRun(deps, 'gc', 'keeper-h-gc-1', { summary, totals: {} });
    expect(lastLoopResult(h.db, 'gc')).toMatchObject({ workflowId: 'keeper-h-gc-1', result: { summary } });
    expect(calls).toEqual(['keeper_gc_removals 2 {"class":"containers"}', 'keeper_gc_removals 0 {"class":"imagePulls"}']);
  });

  it("sets the open circuits after a tick, and each template's ready containers after a refill (0 for none)", async () => {
    const h = memoryHost();
    const { meter, calls } = recordingMeter();
    const deps = { ...h.deps, metrics: createKeeperMetrics(meter) };
    await recordRun(deps, 'reconcile', 'tick', { checked: 0 });
    expect(calls).toEqual(['keeper_circuits_open 0 {}']);
    calls.length = 0;
    await recordRun(deps, 'pool', 'refill', { created: [] });
    expect(calls.length).toBeGreaterThan(0);
    for (const c of calls) expect(c).toMatch(/^keeper_pool_ready 0 \{"template":"[^"]+"\}$/);
    expect([lastLoopResult(h.db, 'reconcile')?.workflowId, lastLoopResult(h.db, 'pool')?.workflowId]).toEqual(['tick', 'refill']);
  });

  it('adds nothing without metrics (a one-shot command), and alert deliveries count by kind and outcome', async () => {
    const h = memoryHost();
    await recordRun(h.deps, 'gc', 'once', { summary: [{ class: 'containers', removed: 1 }] });
    expect(lastLoopResult(h.db, 'gc')).not.toBeNull();
    const { meter, calls } = recordingMeter();
    const target = { id: 't1', shown: 'https://hooks.example' };
    const event = { kind: 'circuit-opened', hostId: 'h', serviceId: 's1', opening: 1 } as Parameters<typeof recordNotifications>[1];
    recordNotifications({ ...h.deps, metrics: createKeeperMetrics(meter) }, event, [
      { target, delivered: true, attempts: 1 },
      { target, delivered: false, attempts: 3, error: 'refused' },
    ] as Parameters<typeof recordNotifications>[2]);
    expect(calls).toEqual([
      'keeper_notifications 1 {"kind":"circuit-opened","outcome":"delivered"}',
      'keeper_notifications 1 {"kind":"circuit-opened","outcome":"failed"}',
    ]);
  });
});
