/**
 * Per-service crash policy from container labels (policy/service-crash-policy.ts) on the real engine, a real
 * SQLite file and the real tick workflow, with the host's defaults (threshold 5, backoff 30m). Nothing is mocked.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { reportedConditions } from '../../src/db/conditions';
import { listCrashRecords } from '../../src/db/crash-records';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { ids } from '../../src/ids';
import type { Settings } from '../../src/settings';
import { EngineFixture, freshDb, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { keeper } from '../helpers/cli';
import { devServerEnv } from '../helpers/temporal';
import { addService, addTenant, nowSec, runServiceContainer, runTick, service } from './helpers';

let env: TestWorkflowEnvironment;
let db: StateDb;
let settings: Settings;
let tenant: string;
const engine = new EngineFixture();
const docker = new DockerClient();
const deps = () => ({ db, docker, settings });
const opened: string[] = [];

beforeAll(async () => {
  env = await devServerEnv();
});
afterAll(async () => {
  await env?.teardown();
});
afterEach(async () => {
  for (const sid of opened.splice(0))
    await env.client.workflow
      .getHandle(ids.circuit(settings.hostId, sid))
      .terminate('test cleanup')
      .catch(() => undefined);
  await engine.cleanup();
  db?.close();
});

/** A service whose container runs `cmd` under `restart`, with ah's labels and `labels`. */
async function serviceWith(
  labels: Record<string, string>,
  cmd: string,
  restartPolicy: 'no' | 'unless-stopped',
): Promise<{ sid: string; cid: string }> {
  const sid = uniqueId('svc');
  const cid = await runServiceContainer(engine, tenant, sid, {
    cmd: ['sh', '-c', cmd],
    restartPolicy,
    labels: { 'ah.tenant': tenant, 'ah.service': sid, 'ah.managed': 'true', ...labels },
  });
  addService(db, tenant, { containerId: cid }, sid);
  return { sid, cid };
}

/** Exits 1 on its first two runs (its filesystem outlives a restart), then stays up: two deaths. */
const DIES_TWICE = 'if [ -f /tmp/2 ]; then exec sleep 3600; fi; if [ -f /tmp/1 ]; then touch /tmp/2; else touch /tmp/1; fi; exit 1';

describe('crash policy labels on the real engine', () => {
  it('opens the circuit of a service labelled keeper.crash-threshold=2 after 2 deaths, with its own backoff, while the host threshold is 5', async () => {
    const fresh = freshDb();
    db = fresh.db;
    settings = testSettings();
    tenant = addTenant(db);
    expect(settings.crashThreshold).toBe(5);
    const own = await serviceWith({ 'keeper.crash-threshold': '2', 'keeper.circuit-backoff': '90s' }, DIES_TWICE, 'unless-stopped');
    const host = await serviceWith({ 'keeper.crash-window': 'ten' }, DIES_TWICE, 'unless-stopped');
    for (const { cid } of [own, host]) {
      await waitFor(
        'two restarts, then running',
        async () => {
          const d = await docker.inspectContainer(cid);
          return d.restartCount === 2 && d.status === 'running';
        },
        30_000,
      );
    }
    opened.push(own.sid);

    const summary = await runTick(env, deps());
    expect(summary.opened).toBe(1);
    const row = service(db, own.sid);
    expect(row).toMatchObject({ status: 'crashed', crash_count: 2, circuit_open: 1, circuit_open_count: 1 });
    expect(row.circuit_retry_at! - nowSec()).toBeGreaterThan(90 - 30);
    expect(row.circuit_retry_at! - nowSec()).toBeLessThanOrEqual(90);
    expect(service(db, host.sid)).toMatchObject({ status: 'crashed', crash_count: 2, circuit_open: 0 });
    // The bad label is reported once, naming it, and the host's window applies.
    const line = `service ${host.sid}: label keeper.crash-window="ten" is not a duration (use e.g. 500ms, 30s, 10m, 4h, 30d); using the host's 10m`;
    expect(reportedConditions(db, settings.hostId, 'reconcile').map((c) => c.message)).toEqual([line]);
    const status = await keeper(['status', '--db', fresh.file, '--host-id', settings.hostId]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`crash policy labels\n  ${line}\n`);
  });

  it('records but never counts the exits of a service labelled keeper.expected-exit-codes=0', async () => {
    const fresh = freshDb();
    db = fresh.db;
    settings = testSettings();
    tenant = addTenant(db);
    const { sid, cid } = await serviceWith({ 'keeper.expected-exit-codes': '0' }, 'sleep 0.3; exit 0', 'unless-stopped');
    await runTick(env, deps());
    await waitFor('Docker to restart it 6 times', async () => (await docker.inspectContainer(cid)).restartCount >= 6, 60_000);
    const summary = await runTick(env, deps());
    expect(summary.opened).toBe(0);
    expect(service(db, sid)).toMatchObject({ crash_count: 0, crash_window_start: null, circuit_open: 0 });
    const records = listCrashRecords(db, sid, 100);
    expect(records.length).toBeGreaterThanOrEqual(5);
    expect(records.every((r) => r.expected && r.exitCode === 0)).toBe(true);
    const crashes = await keeper(['crashes', sid, '--db', fresh.file]);
    expect(crashes.code).toBe(0);
    expect(crashes.stdout).toContain('(expected exit: not counted)');
  });
});
