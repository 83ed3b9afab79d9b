/**
 * A real Prometheus scrapes a real `keeper worker` (the built bin, on the suite's Temporal dev server and this
 * suite's Docker engine) and evaluates the shipped alert rules: the target is up (a label twice used to mark it
 * down), promtool accepts the exposition, a real crash-looping service shows in keeper_crashes_total and opens
 * its circuit, KeeperCircuitOpen fires, and the circuit's alert reaches a real webhook receiver and shows in
 * keeper_notifications_total. The dashboard's queries run against the same data.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { DockerClient } from '../../src/docker/client';
import { ids } from '../../src/ids';
import { LOOP_NAMES } from '../../src/loops/registry';
import { freePort } from '../../src/temporal/dev-server';
import { keeper, startKeeper } from '../helpers/cli';
import { CRASHLOOP_IMAGE, tempDir, uniqueId, waitFor } from '../helpers/fixtures';
import { ALERT_RULES, DASHBOARD, Prometheus, promtool, stopProcess } from '../helpers/prometheus';
import { WebhookReceiver } from '../helpers/webhook-receiver';

const dir = tempDir('keeper-scrape-');
const hostId = uniqueId('prom-');
const tenant = uniqueId('pm-');
const docker = new DockerClient();
let worker: ReturnType<typeof startKeeper> | undefined;
let prometheus: Prometheus | undefined;
let receiver: WebhookReceiver | undefined;
let metricsUrl = '';
let service: { id: string; containerId: string } | undefined;

/** Series the SDK and keeper create at their first increment; this test makes none of those events happen. */
const FIRST_EVENT_ONLY = new Set([
  'temporal_workflow_failed_total',
  'temporal_activity_execution_failed_total',
  'keeper_gc_removals_total',
]);

beforeAll(async () => {
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  receiver = await WebhookReceiver.start();
  // Short loops so that a crash is seen in seconds; no GC (it would sweep the shared engine), no pool containers.
  worker = startKeeper(
    [
      'worker',
      '--db',
      path.join(dir, 'state.db'),
      '--host-id',
      hostId,
      '--metrics-port',
      String(port),
      '--reconcile-interval',
      '2s',
      '--pool-interval',
      '2s',
      '--pool-size',
      '0',
      '--gc-first-delay',
      '24h',
      '--crash-threshold',
      '2',
      '--log-format',
      'json',
      '--notify-webhook',
      receiver.url(),
    ],
    { TEMPORAL_ADDRESS: inject('devServerAddress') },
  );
  await worker.waitForOutput(/keeper is running/, 60_000);
  prometheus = await Prometheus.start({ targets: [`127.0.0.1:${port}`], ruleFiles: [ALERT_RULES] });
});

afterAll(async () => {
  const problems: string[] = [];
  const step = async (what: string, fn: () => Promise<unknown>) => {
    await fn().catch((err: Error) => problems.push(`${what}: ${err.message}`));
  };
  await step('stop the worker', async () => worker && stopProcess(worker.child, 45_000));
  await step('stop prometheus', async () => prometheus?.stop());
  await step('stop the webhook receiver', async () => receiver?.down());
  await step('remove the service container', async () => service && docker.removeContainer(service.containerId, { force: true }));
  // The service's deploy made the network: a file that failed before it has none to remove.
  await step('remove the tenant network', async () => service && docker.removeNetwork(`ah-tenant-${tenant}`));
  await step("remove the host's schedules and circuit workflow", () => forgetHost(hostId, service?.id));
  fs.rmSync(dir, { recursive: true, force: true });
  if (problems.length > 0) throw new Error(`cleanup failed: ${problems.join('; ')}`);
});

/** The shared dev server outlives this file: its schedules and the circuit's workflow for this host go. */
async function forgetHost(host: string, serviceId: string | undefined): Promise<void> {
  const connection = await Connection.connect({ address: inject('devServerAddress') });
  try {
    const client = new Client({ connection });
    for (const loop of LOOP_NAMES)
      await client.schedule
        .getHandle(ids.schedule(host, loop))
        .delete()
        .catch(() => undefined);
    if (serviceId)
      await client.workflow
        .getHandle(ids.circuit(host, serviceId))
        .terminate('test over')
        .catch(() => undefined);
  } finally {
    await connection.close();
  }
}

const metricsText = async () => (await fetch(metricsUrl)).text();

describe('a real Prometheus scraping a real keeper worker', () => {
  it('has the worker as a healthy target', async () => {
    const target = await waitFor(
      'the keeper target to be up',
      async () => {
        const [t] = await prometheus!.targets();
        if (t?.health === 'down') throw new Error(`target down: ${t.lastError}`); // kept for the timeout's message
        return t?.health === 'up' ? t : undefined;
      },
      30_000,
    );
    expect(target).toMatchObject({ health: 'up', lastError: '', labels: { job: 'keeper' } });
    const up = await prometheus!.query('up{job="keeper"}');
    expect(up.map((s) => s.value)).toEqual([1]);
  });

  it('sees a real crash in keeper_crashes_total', { timeout: 90_000 }, async () => {
    const r = await keeper([
      'service',
      'create',
      '--db',
      path.join(dir, 'state.db'),
      '--tenant',
      tenant,
      '--name',
      'loop',
      '--image',
      CRASHLOOP_IMAGE,
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    service = JSON.parse(r.stdout) as { id: string; containerId: string };
    const crashes = await waitFor(
      'keeper_crashes_total in Prometheus',
      async () => {
        const [s] = await prometheus!.query(`keeper_crashes_total{keeper_host="${hostId}",service_id="${service!.id}"}`);
        return s && s.value >= 1 ? s : undefined;
      },
      60_000,
      500,
    );
    expect(crashes.metric).toMatchObject({ job: 'keeper', keeper_host: hostId, service_id: service.id });
  });

  it('fires KeeperCircuitOpen once the crash-looping service has its circuit opened', { timeout: 90_000 }, async () => {
    const alert = await waitFor(
      'KeeperCircuitOpen to fire',
      async () => {
        const alerts = await prometheus!.alerts();
        return alerts.find((a) => a.labels.alertname === 'KeeperCircuitOpen' && a.labels.keeper_host === hostId && a.state === 'firing');
      },
      60_000,
      500,
    );
    expect(alert.labels).toMatchObject({ severity: 'warning', job: 'keeper' });
    expect(Number(alert.value)).toBe(1);
    expect((await docker.inspectContainer(service!.containerId)).status).toBe('exited');
  });

  it("delivers the circuit's alert to the webhook, and counts it in keeper_notifications_total", { timeout: 90_000 }, async () => {
    await waitFor(
      'the opened alert at the receiver',
      () => receiver!.uniqueKeys().includes(`keeper/${hostId}/${service!.id}/opening-1/circuit-opened`),
      30_000,
    );
    const delivered = await waitFor(
      'keeper_notifications_total in Prometheus',
      async () => {
        const [s] = await prometheus!.query(
          `keeper_notifications_total{keeper_host="${hostId}",kind="circuit-opened",outcome="delivered"}`,
        );
        return s && s.value >= 1 ? s : undefined;
      },
      60_000,
      500,
    );
    expect(delivered.metric).toMatchObject({ job: 'keeper', keeper_host: hostId });
    // A counter born at its first event has a rate (what the dashboard's panel shows) from its second scrape on.
    await waitFor(
      'a second scrape of it',
      async () => (await prometheus!.query(`increase(keeper_notifications_total{keeper_host="${hostId}"}[1m])`)).length > 0,
      30_000,
      500,
    );
  });

  it('serves an exposition that promtool check metrics accepts, lint included', async () => {
    const text = await metricsText();
    expect(text).toMatch(new RegExp(`^keeper_crashes_total\\{service_id="${service!.id}",keeper_host="${hostId}"\\} \\d+$`, 'm'));
    expect(text).toMatch(/^keeper_disk_used_ratio\{path="[^"]+",role="state DB directory",keeper_host="[^"]+"\} [\d.e-]+$/m);
    const r = promtool(['check', 'metrics'], text);
    expect(r.output).toBe('');
    expect(r.code).toBe(0);
  });

  it('exports every metric that the alert rules and the dashboard query', async () => {
    const exported = new Set([...(await metricsText()).matchAll(/^([a-z_]+)[{ ]/gm)].map((m) => m[1]));
    const used = new Set([...queriesOfRules(), ...queriesOfDashboard()].flatMap(metricNames));
    const missing = [...used].filter((m) => m !== 'up' && !exported.has(m) && !FIRST_EVENT_ONLY.has(m));
    expect(missing).toEqual([]);
    expect(used.size).toBeGreaterThan(10);
  });

  it('runs every dashboard query on the real Prometheus; panels of what happened here have data', async () => {
    const empty: string[] = [];
    for (const expr of queriesOfDashboard()) {
      const q = expr.replaceAll('$__rate_interval', '1m').replaceAll('$host', hostId);
      const samples = await prometheus!.query(q);
      if (samples.length === 0 && !metricNames(expr).some((m) => FIRST_EVENT_ONLY.has(m))) empty.push(expr);
    }
    expect(empty).toEqual([]);
  });
});

function queriesOfRules(): string[] {
  const doc = parse(fs.readFileSync(ALERT_RULES, 'utf8')) as { groups: { rules: { expr: string }[] }[] };
  return doc.groups.flatMap((g) => g.rules.map((r) => r.expr));
}

function queriesOfDashboard(): string[] {
  const doc = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as { panels: { targets?: { expr: string }[] }[] };
  return doc.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
}

/** Metric names in a PromQL expression: keeper's and the SDK's by prefix (keeper_host is a label), and `up`. */
function metricNames(expr: string): string[] {
  const names = [...expr.matchAll(/\b(?:keeper|temporal)_[a-z_]+\b/g)].map((m) => m[0]).filter((n) => n !== 'keeper_host');
  return /\bup\{/.test(expr) ? [...names, 'up'] : names;
}
