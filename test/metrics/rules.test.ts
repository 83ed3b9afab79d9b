/**
 * The shipped alert rules and dashboard, checked with the real promtool: the rules load, their unit tests
 * pass, every alert is tested both firing and silent, and the dashboard is one Grafana can lay out. Whether
 * the dashboard's queries run against real data is for scrape.test.ts, which has a Prometheus and a worker.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ALERT_RULES, ALERT_TESTS, DASHBOARD, promtool } from '../helpers/prometheus';

interface Rule {
  alert: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface AlertTest {
  alertname: string;
  exp_alerts?: unknown[];
}

const rules = (parse(fs.readFileSync(ALERT_RULES, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);
const tests = (parse(fs.readFileSync(ALERT_TESTS, 'utf8')) as { tests: { alert_rule_test: AlertTest[] }[] }).tests.flatMap(
  (t) => t.alert_rule_test,
);

describe('deploy/prometheus/keeper-alerts.yml', () => {
  it('is valid for promtool check rules', () => {
    const r = promtool(['check', 'rules', ALERT_RULES]);
    expect(r.output).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(r.code, r.output).toBe(0);
  });

  it('passes its unit tests (promtool test rules)', () => {
    const r = promtool(['test', 'rules', ALERT_TESTS]);
    expect(r.output).toMatch(/SUCCESS/);
    expect(r.code, r.output).toBe(0);
  });

  it('has the alerts the brief asks for, each with a severity, a summary and a description', () => {
    const names = new Set(rules.map((r) => r.alert));
    expect([...names].sort()).toEqual([
      'KeeperAlertDeliveryFailing',
      'KeeperCircuitOpen',
      'KeeperDiskBlock',
      'KeeperDiskWarn',
      'KeeperEventWatcherUnavailable',
      'KeeperLookFailing',
      'KeeperLoopFailing',
      'KeeperLoopNotRunning',
      'KeeperServiceCrashing',
      'KeeperWorkerDown',
    ]);
    for (const r of rules) {
      expect(['warning', 'critical'], r.alert).toContain(r.labels?.severity);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      expect(r.annotations?.description, r.alert).toBeTruthy();
    }
    const loops = rules.filter((r) => r.alert === 'KeeperLoopNotRunning').map((r) => r.labels?.loop);
    expect(loops.sort()).toEqual(['gc', 'pool', 'reconcile']);
  });

  it('has a unit test that makes each alert fire, and one where it stays silent', () => {
    for (const name of new Set(rules.map((r) => r.alert))) {
      const cases = tests.filter((t) => t.alertname === name);
      expect(
        cases.some((t) => (t.exp_alerts ?? []).length > 0),
        `${name} fires in a test`,
      ).toBe(true);
      expect(
        cases.some((t) => (t.exp_alerts ?? []).length === 0),
        `${name} stays silent in a test`,
      ).toBe(true);
    }
  });
});

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { uid: string };
  targets?: { expr: string; datasource?: { uid: string } }[];
}

describe('deploy/grafana/keeper.json', () => {
  const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as {
    uid: string;
    panels: Panel[];
    templating: { list: { name: string; type: string }[] };
  };
  const panels = dashboard.panels.filter((p) => p.type !== 'row');
  const variables = new Set(dashboard.templating.list.map((v) => v.name));

  it('queries the templated Prometheus data source and only defined variables', () => {
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')?.type).toBe('datasource');
    for (const p of panels) {
      expect(p.datasource?.uid, p.title).toBe('${datasource}');
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets ?? []) {
        expect(t.datasource?.uid, p.title).toBe('${datasource}');
        for (const [, name] of t.expr.matchAll(/\$(\w+)/g)) {
          expect(name === '__rate_interval' || variables.has(name), `${p.title}: $${name}`).toBe(true);
        }
      }
    }
  });

  it('shows crashes, circuits, loop runs, failures and latency, the pool, GC, Docker calls, disk and alert deliveries', () => {
    const exprs = panels
      .flatMap((p) => p.targets ?? [])
      .map((t) => t.expr)
      .join('\n');
    for (const metric of [
      'keeper_crashes_total',
      'keeper_circuits_open',
      'temporal_workflow_completed_total',
      'temporal_workflow_failed_total',
      'temporal_workflow_endtoend_latency_bucket',
      'keeper_pool_ready',
      'keeper_gc_removals_total',
      'keeper_docker_api_calls_total',
      'keeper_disk_used_ratio',
      'keeper_event_watcher_state',
      'keeper_notifications_total',
    ]) {
      expect(exprs, metric).toContain(metric);
    }
  });

  it('lays its panels out on the 24-column grid without overlaps, with unique ids', () => {
    const all = dashboard.panels;
    expect(new Set(all.map((p) => p.id)).size).toBe(all.length);
    for (const p of all) expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
    const overlap = (a: Panel['gridPos'], b: Panel['gridPos']) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
    for (const [i, a] of all.entries()) {
      for (const b of all.slice(i + 1)) expect(overlap(a.gridPos, b.gridPos), `${a.title} / ${b.title}`).toBe(false);
    }
  });
});
