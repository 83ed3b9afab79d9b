/**
 * The reconcile tick's rules (host/reconcile: observe, then apply) on an in-memory engine, a test double (see
 * test/helpers/memory-engine.ts), with a real SQLite state DB: deaths counted once from restart counts, a 404
 * read as "gone" and any other engine error as "skip, count nothing". test/reconcile/ runs the same on a real engine.
 */
import { describe, expect, it } from 'vitest';
import { applyObservation } from '../../src/host/reconcile/apply';
import { recoverCircuit } from '../../src/host/circuit';
import { housekeep } from '../../src/host/reconcile/housekeep';
import { observeHost } from '../../src/host/reconcile/observe';
import { crashPolicy } from '../../src/policy/deaths/decision';
import { listCrashRecords } from '../../src/db/crash-records';
import { VANISHED_REASON } from '../../src/policy/rows';
import { TEST_IMAGE, uniqueId } from '../helpers/fixtures';
import { addService, deployments, service } from '../reconcile/rows';
import { recordHostStart } from '../../src/db/keeper-hosts';
import { EVENTS_KEPT } from '../helpers/memory-engine';
import { memoryHost, runningService, type MemoryHost } from './world';

async function tick(h: MemoryHost) {
  const policy = crashPolicy(h.settings);
  const kept = housekeep(h.deps, policy);
  const obs = await observeHost(h.deps, policy, h.nowSec());
  const applied = await applyObservation(h.deps, policy, obs);
  return { kept, obs, applied, policy };
}

/** Every row of ah's tables that a tick could touch, and keeper's container snapshots. */
const rows = (h: MemoryHost) =>
  ['services', 'deployments', 'databases', 'environments', 'keeper_container_snapshots'].map((t) =>
    h.db.prepare(`SELECT * FROM ${t} ORDER BY rowid`).all(),
  );

describe('crash accounting (in-memory engine)', () => {
  it('counts an exited container once, as ah writes it, and never again while it stays down', async () => {
    const h = memoryHost();
    const { sid, cid } = await runningService(h, { restartPolicy: 'no' });
    h.advance(30);
    h.engine.die(cid, { exitCode: 3 });
    expect((await tick(h)).applied).toMatchObject({ crashes: 1, crashedServices: 1, opened: [] });
    expect(service(h.db, sid)).toMatchObject({ status: 'crashed', crash_count: 1, last_error: 'container exited (exit code 3)' });
    for (const later of [30, 600]) {
      h.advance(later);
      expect((await tick(h)).applied.crashes).toBe(0);
    }
    expect(service(h.db, sid).crash_count).toBe(1);
    expect(deployments(h.db, sid)).toEqual([expect.objectContaining({ status: 'crashed', trigger: 'reconciler' })]);
  });

  it('counts each restart the engine made between two looks once, and the service back up 10 s later', async () => {
    const h = memoryHost();
    const { sid, cid } = await runningService(h);
    expect((await tick(h)).applied.crashes).toBe(0);
    h.advance(60);
    h.engine.die(cid, { exitCode: 1 });
    h.advance(3);
    h.engine.die(cid, { exitCode: 1 });
    expect(h.engine.container(cid)).toMatchObject({ state: 'running', restartCount: 2 });
    const second = await tick(h);
    expect(second.applied.crashes).toBe(2);
    expect(service(h.db, sid)).toMatchObject({ status: 'crashed', crash_count: 2 });
    // The same observation applied again (a retried activity) counts nothing.
    expect((await applyObservation(h.deps, second.policy, second.obs)).crashes).toBe(0);
    h.advance(60);
    expect((await tick(h)).applied).toMatchObject({ crashes: 0, recovered: 1 });
    expect(service(h.db, sid)).toMatchObject({ status: 'running', crash_count: 2 });
    expect(h.db.prepare('SELECT COUNT(*) FROM keeper_crash_records WHERE service_id = ?').pluck().get(sid)).toBe(2);
  });

  it('opens the circuit at the threshold within one tick: the container is stopped and kept', async () => {
    const h = memoryHost();
    const { sid, cid } = await runningService(h);
    await tick(h);
    for (let i = 0; i < 5; i++) {
      h.advance(2);
      h.engine.die(cid);
    }
    const { applied } = await tick(h);
    expect(applied.crashes).toBe(5);
    expect(applied.opened).toEqual([
      { serviceId: sid, opening: 1, escalation: 1, retryAt: expect.any(Number), why: '5 crashes within 600s (threshold 5)' },
    ]);
    expect(service(h.db, sid)).toMatchObject({ status: 'crashed', circuit_open: 1, container_id: cid });
    expect(h.engine.container(cid).state).toBe('exited');
    h.advance(30);
    expect((await tick(h)).applied).toMatchObject({ crashes: 0, opened: [] });
  });

  it('restarts a container that turned unhealthy and counts one crash', async () => {
    const h = memoryHost();
    const { sid, cid } = await runningService(h, { healthcheck: true });
    h.engine.setHealth(cid, 'healthy');
    await tick(h);
    h.advance(60);
    h.engine.setHealth(cid, 'unhealthy');
    const unhealthyAtMs = h.engine.container(cid).unhealthySinceMs;
    h.advance(8);
    const startedBefore = h.engine.container(cid).startedAtMs;
    expect((await tick(h)).applied).toMatchObject({ crashes: 1, unhealthyRestarted: 1 });
    // Dated when its check failed (the engine's health log), not when the tick found it.
    expect(recordsOf(h, sid)).toEqual([expect.objectContaining({ seenBy: 'health-check', diedAtMs: unhealthyAtMs })]);
    expect(service(h.db, sid)).toMatchObject({ status: 'crashed', last_error: 'container unhealthy (health check failed)' });
    expect(h.engine.container(cid)).toMatchObject({ state: 'running', health: 'starting' });
    expect(h.engine.container(cid).startedAtMs).toBeGreaterThan(startedBefore!);
  });
});

describe("an event is a hint, the engine is the truth (in-memory engine whose list lags a death, as Docker's does)", () => {
  it("a run never trusts a list entry of a container that had an event since keeper's last look: it inspects it", async () => {
    const h = memoryHost();
    const { sid, cid } = await runningService(h, { restartPolicy: 'no' });
    h.advance(60);
    await tick(h);
    h.advance(30);
    h.engine.listLagsDeaths = true;
    h.engine.die(cid, { exitCode: 3 });
    expect((await h.engine.listContainerUsage()).find((c) => c.id === cid)).toMatchObject({
      state: 'running',
      status: 'Up About a minute',
    });
    // Without the event's hint the list is trusted: the death is passed over.
    expect((await tick(h)).applied.crashes).toBe(0);
    h.advance(1);
    h.deps.hints!.noteEvent(cid, h.engine.container(cid).finishedAtMs as number);
    expect((await tick(h)).applied.crashes).toBe(1);
    expect(service(h.db, sid)).toMatchObject({ status: 'crashed', crash_count: 1, last_error: 'container exited (exit code 3)' });
  });

  it('an event older than the last look no longer costs an inspect', async () => {
    const h = memoryHost();
    const { cid } = await runningService(h);
    h.deps.hints!.noteEvent(cid, h.nowSec() * 1000);
    h.advance(60);
    await tick(h);
    h.advance(30);
    const inspects = () => h.engine.calls.get('container.inspect') ?? 0;
    const before = inspects();
    await tick(h);
    expect(inspects()).toBe(before);
  });
});

describe('404 against a transient error (in-memory engine)', () => {
  it('a transient inspect error (HTTP 500, or no answer) skips the container and counts nothing; the death is counted once it answers', async () => {
    for (const status of [500, undefined]) {
      const h = memoryHost();
      const { sid, cid } = await runningService(h, { restartPolicy: 'no' });
      h.engine.die(cid, { exitCode: 1 });
      h.engine.fail('container.inspect', { status });
      const before = rows(h);
      const { obs, applied } = await tick(h);
      expect(obs.transientErrors).toBe(1);
      expect(applied.crashes).toBe(0);
      expect(rows(h)).toEqual(before);
      h.engine.clearFailures();
      h.advance(10);
      expect((await tick(h)).applied.crashes).toBe(1);
      expect(service(h.db, sid).crash_count).toBe(1);
    }
  });

  it('a 404 means the container is gone: crashed once, then stopped on the next tick', async () => {
    for (const gone of ['removed', 'answered 404'] as const) {
      const h = memoryHost();
      const { sid, cid } = await runningService(h);
      if (gone === 'removed') await h.engine.removeContainer(cid, { force: true });
      else h.engine.fail('container.inspect', { status: 404, ref: cid });
      expect((await tick(h)).applied.crashes).toBe(1);
      expect(service(h.db, sid)).toMatchObject({ status: 'crashed', crash_count: 1, last_error: 'container not found by reconciler' });
      h.advance(30);
      expect((await tick(h)).applied).toMatchObject({ crashes: 0, missing: 1 });
      expect(service(h.db, sid)).toMatchObject({ status: 'stopped', crash_count: 1 });
    }
  });

  it('container lists that fail count nothing, while the DB-only steps still run', async () => {
    for (const status of [500, 404, undefined]) {
      const h = memoryHost();
      const { sid, cid, tenant } = await runningService(h, { restartPolicy: 'no' });
      h.engine.die(cid);
      const stale = addService(h.db, tenant, { status: 'deploying', updatedAt: h.nowSec() - 11 * 60 });
      h.engine.fail('container.list', { status });
      const { obs, applied, kept } = await tick(h);
      expect(obs.dockerError).toContain(status === undefined ? 'ECONNREFUSED' : `HTTP ${status}`);
      expect(applied.crashes).toBe(0);
      expect(service(h.db, sid)).toMatchObject({ status: 'running', crash_count: 0 });
      expect(kept.failedDeploys).toBe(1);
      expect(service(h.db, stale).status).toBe('failed');
    }
  });

  it('a stop refused transiently is counted as an action error; the crash and the opened circuit are recorded all the same', async () => {
    const h = memoryHost();
    const { sid, cid } = await runningService(h, { fields: { crashCount: 4, crashWindowStart: Math.floor(Date.now() / 1000) - 60 } });
    await tick(h);
    h.advance(30);
    h.engine.die(cid);
    h.engine.fail('container.stop', { status: 500, times: 1 });
    const { applied } = await tick(h);
    expect(applied).toMatchObject({ crashes: 1, dockerActionErrors: 1 });
    expect(applied.opened).toHaveLength(1);
    expect(service(h.db, sid)).toMatchObject({ circuit_open: 1, crash_count: 5 });
    expect(h.engine.container(cid).state).toBe('running');
  });
});

describe('ownership (in-memory engine)', () => {
  it("acts only on a watched service's own container: foreign ones, a second container claiming the service, and rows it does not watch are left alone", async () => {
    const h = memoryHost();
    const { sid, cid, tenant } = await runningService(h);
    const foreign = await h.engine.createContainer({
      name: uniqueId('not-ah'),
      image: TEST_IMAGE,
      labels: {},
      restartPolicy: 'no',
      network: 'none',
    });
    const claimant = await h.engine.createContainer({
      name: `ah-${tenant}-${sid}-old`,
      image: TEST_IMAGE,
      labels: { 'ah.tenant': tenant, 'ah.service': sid, 'ah.managed': 'true' },
      restartPolicy: 'no',
      network: 'none',
    });
    const stopped = await runningService(h, { tenant, restartPolicy: 'no', fields: { status: 'stopped' } });
    const held = await runningService(h, {
      tenant,
      restartPolicy: 'no',
      fields: { circuitOpen: 1, circuitOpenCount: 1, circuitRetryAt: h.nowSec() + 600 },
    });
    for (const c of [foreign, claimant]) await h.engine.startContainer(c);
    const first = await tick(h);
    // The one container keeper stops: the open circuit's, running, which its circuit wants down.
    expect(first.obs.openCircuitsRunning).toEqual([{ serviceId: held.sid, containerId: held.cid }]);
    expect(h.engine.calls.get('container.stop')).toBe(1);
    h.advance(60);
    for (const c of [foreign, claimant, stopped.cid]) h.engine.die(c);
    const ahRows = () => rows(h).slice(0, 4); // keeper's own looks move their time forward
    const before = ahRows();
    const { obs, applied } = await tick(h);
    expect(applied).toMatchObject({ crashes: 0, containersStopped: 0, unhealthyRestarted: 0, missing: 0 });
    expect(obs.splitBrain).toEqual([{ containerId: claimant.slice(0, 12), serviceId: sid, dbContainerId: cid.slice(0, 12) }]);
    expect(ahRows()).toEqual(before);
    expect(h.engine.calls.get('container.stop')).toBe(1);
    expect(h.engine.calls.get('container.restart') ?? 0).toBe(0);
  });

  it('stops a created or restarting row whose container is gone (404); a deploying one waits for its timeout; an engine error changes nothing', async () => {
    const h = memoryHost();
    const gone = { created: await runningService(h), restarting: await runningService(h), deploying: await runningService(h) };
    for (const [status, s] of Object.entries(gone)) {
      h.db.prepare('UPDATE services SET status = ? WHERE id = ?').run(status, s.sid);
      await h.engine.removeContainer(s.cid, { force: true });
    }
    h.engine.fail('container.inspect', { status: 500, ref: gone.restarting.cid, times: 1 });
    const first = await tick(h);
    expect(first.applied).toMatchObject({ crashes: 0, missing: 1 });
    expect(first.obs.transientErrors).toBe(1);
    expect(service(h.db, gone.created.sid)).toMatchObject({ status: 'stopped', last_error: VANISHED_REASON, crash_count: 0 });
    expect(service(h.db, gone.restarting.sid).status).toBe('restarting');
    h.advance(30);
    expect((await tick(h)).applied).toMatchObject({ crashes: 0, missing: 1 });
    expect(service(h.db, gone.restarting.sid)).toMatchObject({ status: 'stopped', last_error: VANISHED_REASON });
    expect(service(h.db, gone.deploying.sid).status).toBe('deploying');
  });
});

describe("a service's crash policy labels (in-memory engine)", () => {
  it('keeper.crash-threshold=2 opens at 2 deaths while the host says 5; a bad label falls back to the host and is named', async () => {
    const h = memoryHost();
    const own = await runningService(h, { labels: { 'keeper.crash-threshold': '2' } });
    const bad = await runningService(h, { labels: { 'keeper.crash-window': 'ten' } });
    await tick(h);
    h.advance(60);
    for (const s of [own, bad]) {
      h.engine.die(s.cid);
      h.engine.die(s.cid);
    }
    const { obs, applied } = await tick(h);
    // The circuit's run says why in the service's own terms.
    expect(applied.opened).toEqual([
      { serviceId: own.sid, opening: 1, escalation: 1, retryAt: expect.any(Number), why: '2 crashes within 600s (threshold 2)' },
    ]);
    expect(service(h.db, own.sid)).toMatchObject({ crash_count: 2, circuit_open: 1 });
    expect(service(h.db, bad.sid)).toMatchObject({ crash_count: 2, circuit_open: 0 });
    expect(obs.labelProblems).toEqual([
      { serviceId: bad.sid, problems: [expect.stringContaining(`label keeper.crash-window="ten" is not a duration`)] },
    ]);
  });

  it('keeper.expected-exit-codes=0 records each such exit, counts none of them, and still counts the others', async () => {
    const h = memoryHost();
    const { sid, cid } = await runningService(h, { labels: { 'keeper.expected-exit-codes': '0' } });
    await tick(h);
    h.advance(60);
    for (let i = 0; i < 6; i++) {
      h.advance(1);
      h.engine.die(cid, { exitCode: 0 });
    }
    expect((await tick(h)).applied).toMatchObject({ crashes: 0, opened: [] });
    expect(service(h.db, sid)).toMatchObject({ crash_count: 0, circuit_open: 0 });
    expect(listCrashRecords(h.db, sid, 100).map((r) => [r.exitCode, r.expected])).toEqual(Array(6).fill([0, true]));
    h.advance(60);
    h.engine.die(cid, { exitCode: 1 });
    expect((await tick(h)).applied.crashes).toBe(1);
    expect(service(h.db, sid).crash_count).toBe(1);
  });
});

/**
 * Plays a crash loop for `forSec` seconds on the test's clock: each run lasts `runSec`, and the engine restarts the
 * container after Docker's restart delay (h.engine.restartBackoff).
 */
function crashLoop(h: MemoryHost, cid: string, runSec: number, forSec: number): void {
  let left = forSec;
  for (;;) {
    const step = Math.min(runSec, left);
    h.advance(step);
    left -= step;
    if (left <= 0) return;
    h.engine.die(cid);
    const c = h.engine.container(cid);
    const wait = Math.min(((c.restartAtMs as number) - (c.finishedAtMs as number)) / 1000, left);
    h.advance(wait);
    left -= wait;
    if (left <= 0) return;
  }
}

/** A host with a 10 s window and a threshold of 3, whose engine restarts containers as Docker does. */
function backoffHost(): MemoryHost {
  const h = memoryHost({ crashWindow: '10s', crashThreshold: '3' });
  h.engine.restartBackoff = true;
  return h;
}

/** Fills the engine's 256-event buffer with events of a container of no service, as a busy host does. */
async function rollEventsOver(h: MemoryHost): Promise<void> {
  h.engine.addImage(TEST_IMAGE);
  const id = await h.engine.createContainer({ name: uniqueId('busy-'), image: TEST_IMAGE, network: 'none' });
  for (let i = 0; i < EVENTS_KEPT; i++) await h.engine.renameContainer(id, uniqueId('busy-'));
}

const recordsOf = (h: MemoryHost, sid: string) => listCrashRecords(h.db, sid, 100).reverse();
const snapshotOf = (h: MemoryHost, sid: string) => h.db.prepare('SELECT * FROM keeper_container_snapshots WHERE service_id = ?').get(sid);

describe("deaths found after an absence, at keeper's first look and later (in-memory engine, Docker's restart backoff)", () => {
  it('a first look at a dense loop a minute old counts every death since the creation, each at its die event, and opens the circuit', async () => {
    const h = backoffHost();
    const { sid, cid } = await runningService(h);
    crashLoop(h, cid, 1, 70);
    expect(h.engine.container(cid).restartCount).toBe(10);
    expect(snapshotOf(h, sid)).toBeUndefined();
    const { applied } = await tick(h);
    expect(applied.crashes).toBe(10);
    expect(applied.opened).toHaveLength(1);
    const records = recordsOf(h, sid);
    expect(records.slice(0, 6).map((r) => r.datedBy)).toEqual(Array(6).fill('event'));
    const createdMs = h.engine.container(cid).createdAtMs;
    // Docker's restart backoff: 1.0, 2.1, 3.3, 4.7, 6.5, 9.1 … s after the creation.
    expect(records.slice(0, 6).map((r) => (r.diedAtMs as number) - createdMs)).toEqual([1_000, 2_100, 3_300, 4_700, 6_500, 9_100]);
  });

  it('a first look counts only the deaths after the crash the row already counted (a window inherited from ah)', async () => {
    const h = backoffHost();
    const { sid, cid } = await runningService(h);
    crashLoop(h, cid, 1, 25); // deaths 1.0, 2.1, 3.3, 4.7, 6.5, 9.1, 13.3 and 20.7 s after the creation
    const createdMs = h.engine.container(cid).createdAtMs;
    // ah's reconciler counted a crash 10 s after the creation (in a window it opened at 5 s).
    const ahTick = (afterMs: number) => Math.floor((createdMs + afterMs) / 1000);
    h.db
      .prepare('UPDATE services SET status = ?, crash_count = 2, crash_window_start = ?, last_crashed_at = ? WHERE id = ?')
      .run('crashed', ahTick(5_000), ahTick(10_000), sid);
    const { applied } = await tick(h);
    expect(applied.crashes).toBe(2);
    expect(recordsOf(h, sid).map((r) => [(r.diedAtMs as number) - createdMs, r.datedBy])).toEqual([
      [13_300, 'live'],
      [20_700, 'live'],
    ]);
  });

  it('a first look does not count what came before keeper ran on the DB: a loop at a deploy two days before, its events still buffered', async () => {
    const h = memoryHost();
    h.engine.restartBackoff = true;
    const { sid, cid } = await runningService(h);
    crashLoop(h, cid, 1, 15); // 7 deaths in 13.3 s (its database was not up yet), then it ran for good
    h.advance(2 * 86_400);
    recordHostStart(h.db, h.settings.hostId, h.nowSec());
    expect((await tick(h)).applied).toMatchObject({ crashes: 0, opened: [] });
    expect(snapshotOf(h, sid)).toMatchObject({ restart_count: 7, state: 'running' });
    expect(recordsOf(h, sid)).toEqual([]);
  });

  it('a first look when no event can be had keeps the old rule: an old container’s restarts are the baseline, a new one’s count', async () => {
    const old = backoffHost();
    const a = await runningService(old);
    crashLoop(old, a.cid, 1, 70);
    old.engine.dropEventHistory();
    expect((await tick(old)).applied).toMatchObject({ crashes: 0, opened: [] });
    expect(snapshotOf(old, a.sid)).toMatchObject({ restart_count: 10 });

    const recent = memoryHost({ crashWindow: '60s', crashThreshold: '3' });
    recent.engine.restartBackoff = true;
    const b = await runningService(recent);
    crashLoop(recent, b.cid, 1, 30);
    await rollEventsOver(recent);
    const { applied } = await tick(recent);
    expect(applied.crashes).toBe(8);
    // No event left: the last death has the inspect's time, the others are placed by the backoff inside the gap.
    const records = recordsOf(recent, b.sid);
    expect(records.map((r) => r.datedBy)).toEqual([...Array(7).fill('spread'), 'live']);
    const createdMs = recent.engine.container(b.cid).createdAtMs;
    expect(records.map((r) => (r.diedAtMs as number) - createdMs)).toEqual([1_000, 2_100, 3_300, 4_700, 6_500, 9_100, 13_300, 20_700]);
  });

  /** keeper looks at a new service, then is away for 70 s of its crash loop while the engine's events roll over. */
  async function busyAbsence(runSec: number) {
    const h = backoffHost();
    const { sid, cid } = await runningService(h);
    await tick(h);
    crashLoop(h, cid, runSec, 70);
    await rollEventsOver(h);
    return { h, sid, cid, applied: (await tick(h)).applied };
  }

  it("a later look after a minute's absence on a busy engine places a dense loop's deaths by the backoff, and the circuit opens", async () => {
    const { h, sid, cid, applied } = await busyAbsence(1);
    expect(applied.crashes).toBe(10);
    expect(applied.opened).toHaveLength(1);
    const records = recordsOf(h, sid);
    expect(records.map((r) => r.datedBy)).toEqual([...Array(9).fill('spread'), 'live']);
    const createdMs = h.engine.container(cid).createdAtMs;
    const placed = records.map((r) => (r.diedAtMs as number) - createdMs);
    expect(placed.slice(0, 3)).toEqual([1_000, 2_100, 3_300]);
  });

  // Docker rounds hours in its status text: 95 or 110 minutes of uptime read "Up 2 hours". Read as exactly 2 hours,
  // a restart 10 minutes into a 1 h 45 min absence would lie before keeper's last look: the look would be trusted and
  // the death never counted (at the next crash, RestartCount would jump by 2 and the old death be dated then).
  it.each([
    [105, 'its die event', false, 'event'],
    [120, 'its die event', false, 'event'],
    [105, "the run's own times, once the engine's events rolled over", true, 'run-times'],
  ])(
    'a death 10 minutes into a %s-minute absence is counted once, dated within the absence by %s',
    async (absenceMin, _by, rolled, datedBy) => {
      const h = memoryHost();
      const { sid, cid } = await runningService(h);
      h.advance(60);
      await tick(h);
      const lookedAtMs = h.nowSec() * 1000;
      h.advance(10 * 60);
      h.engine.die(cid, { exitCode: 3 });
      const diedAtMs = h.engine.container(cid).finishedAtMs as number;
      h.advance((absenceMin - 10) * 60);
      if (rolled) await rollEventsOver(h);
      expect((await h.engine.listContainerUsage()).find((c) => c.id === cid)?.status).toBe('Up 2 hours');
      expect((await tick(h)).applied.crashes).toBe(1);
      expect(recordsOf(h, sid)).toEqual([expect.objectContaining({ diedAtMs, datedBy, exitCode: rolled ? null : 3 })]);
      expect(diedAtMs).toBeGreaterThan(lookedAtMs);
      h.advance(60);
      expect((await tick(h)).applied.crashes).toBe(0);
      expect(service(h.db, sid).crash_count).toBe(1);
    },
  );

  it('the same for a death every 11 s: the deaths stay a run apart, and no circuit opens', async () => {
    const { h, sid, applied } = await busyAbsence(11);
    expect(applied.crashes).toBe(6);
    expect(applied.opened).toEqual([]);
    const times = recordsOf(h, sid).map((r) => r.diedAtMs as number);
    times.slice(1).forEach((t, i) => expect(t - times[i]).toBeGreaterThanOrEqual(10_000));
    expect(service(h.db, sid)).toMatchObject({ circuit_open: 0, crash_count: 1 });
  });
});

/** Five deaths open the circuit (the host's threshold); the container is stopped and kept, unless its stop fails. */
async function openedCircuit(h: MemoryHost, o: { stopFails?: boolean } = {}) {
  const svc = await runningService(h);
  await tick(h);
  for (let i = 0; i < 5; i++) {
    h.advance(2);
    h.engine.die(svc.cid);
  }
  if (o.stopFails) h.engine.fail('container.stop');
  expect((await tick(h)).applied.opened).toHaveLength(1);
  h.engine.clearFailures();
  return svc;
}

describe("a tick gathers the engine's events once, and holds what a failed read did not cover (in-memory engine)", () => {
  it('reads the events once for the deaths it counts and the OOM kills it may confirm', async () => {
    const h = memoryHost();
    const a = await runningService(h);
    const b = await runningService(h);
    await tick(h);
    h.advance(30);
    h.engine.die(a.cid, { exitCode: 137 }); // a SIGKILL, for now: its OOM kill may still be reported
    h.advance(2);
    expect((await tick(h)).applied.crashes).toBe(1);
    h.advance(30);
    h.engine.die(b.cid, { exitCode: 1 });
    h.advance(2);
    const before = h.engine.calls.get('events') ?? 0;
    expect((await tick(h)).applied.crashes).toBe(1);
    expect((h.engine.calls.get('events') ?? 0) - before).toBe(1);
  });

  it('an expected exit known only by RestartCount while the events cannot be read is held, then not counted (S6)', async () => {
    const h = memoryHost();
    const { sid, cid } = await runningService(h, { labels: { 'keeper.expected-exit-codes': '3' } });
    await tick(h);
    h.advance(60);
    h.engine.die(cid, { exitCode: 3 }); // restarted at once: the inspect shows its RestartCount, not its exit code
    h.engine.fail('events');
    h.advance(5);
    const held = await tick(h);
    expect(held.applied.crashes).toBe(0);
    expect(held.obs.deathsHeld).toBe(1);
    expect(listCrashRecords(h.db, sid, 10)).toEqual([]);
    expect(snapshotOf(h, sid)).toMatchObject({ restart_count: 0 }); // kept: the next look counts from it
    h.engine.clearFailures();
    h.advance(5);
    expect((await tick(h)).applied.crashes).toBe(0);
    expect(listCrashRecords(h.db, sid, 10).map((r) => [r.exitCode, r.expected])).toEqual([[3, true]]);
  });

  it('the hold is bounded: 2 minutes after the look before, the death counts, its exit code unknown', async () => {
    const h = memoryHost();
    const { sid, cid } = await runningService(h, { labels: { 'keeper.expected-exit-codes': '3' } });
    await tick(h);
    h.engine.die(cid, { exitCode: 3 });
    h.engine.fail('events');
    h.advance(60);
    expect((await tick(h)).applied.crashes).toBe(0);
    h.advance(61);
    expect((await tick(h)).applied.crashes).toBe(1);
    expect(listCrashRecords(h.db, sid, 10).map((r) => [r.exitCode, r.expected])).toEqual([[null, false]]);
  });

  it("a service that expects no exit code is counted at once: the container's own count decides it", async () => {
    const h = memoryHost();
    const { cid } = await runningService(h);
    await tick(h);
    h.engine.die(cid, { exitCode: 3 });
    h.engine.fail('events');
    h.advance(5);
    const t = await tick(h);
    expect(t.applied.crashes).toBe(1);
    expect(t.obs.deathsHeld).toBeUndefined();
  });
});

describe('what the soak found, each on its own (in-memory engine; RELIABILITY.md, the soak)', () => {
  /** A service that died once, counted: keeper's snapshot holds RestartCount 1. */
  async function diedOnce(h: MemoryHost, restartPolicy: 'no' | 'unless-stopped' = 'unless-stopped') {
    const svc = await runningService(h, { restartPolicy });
    await tick(h);
    h.advance(60);
    h.engine.die(svc.cid);
    h.advance(2);
    expect((await tick(h)).applied.crashes).toBe(1);
    return svc;
  }

  it("S1: deaths after dockerd's restart count from 0, told by the container's own times when the events are gone", async () => {
    const h = memoryHost();
    const { sid, cid } = await diedOnce(h);
    h.advance(30);
    h.engine.restartEngine(); // RestartCount back at 0, the events gone
    h.advance(5);
    h.engine.die(cid);
    h.advance(3);
    h.engine.die(cid); // RestartCount 2: the delta from keeper's 1 says 1
    h.engine.events.splice(0); // and the engine's 256-event buffer rolled over (its restart's starts of many containers)
    h.advance(2);
    expect((await tick(h)).applied.crashes).toBe(2);
    expect(service(h.db, sid).crash_count).toBe(3);
    expect(snapshotOf(h, sid)).toMatchObject({ restart_count: 2 });
    h.advance(5);
    expect((await tick(h)).applied.crashes).toBe(0); // counted once
  });

  it("S1: a look after dockerd's restart counts from it; a container dockerd did not start again keeps its count", async () => {
    const h = memoryHost();
    const looked = await diedOnce(h);
    const down = await diedOnce(h, 'no'); // exited, and its policy brings it back neither now nor after a restart
    h.advance(30);
    h.engine.restartEngine();
    h.advance(5);
    expect((await tick(h)).applied.crashes).toBe(0); // the restart itself is no death of either
    h.advance(5);
    h.engine.die(looked.cid);
    h.engine.events.splice(0);
    h.advance(2);
    expect((await tick(h)).applied.crashes).toBe(1);
    expect(service(h.db, down.sid).crash_count).toBe(1);
  });

  it('S4: does not stop the container of a circuit that a recovery closed after the observation read it', async () => {
    const h = memoryHost();
    const { sid, cid } = await openedCircuit(h);
    await h.engine.startContainer(cid); // someone started it: the next tick stops it again ...
    const policy = crashPolicy(h.settings);
    const obs = await observeHost(h.deps, policy, h.nowSec());
    expect(obs.openCircuitsRunning).toEqual([{ serviceId: sid, containerId: cid }]);
    // ... unless, between its observation and its stop, the recovery closed the circuit and started the container.
    h.db.prepare('UPDATE services SET circuit_open = 0 WHERE id = ?').run(sid);
    expect((await applyObservation(h.deps, policy, obs)).containersStopped).toBe(0);
    expect(h.engine.container(cid).state).toBe('running');
  });

  it("S4: leaves an open circuit's running container to its recovery from the retry time on", async () => {
    const h = memoryHost();
    const { sid, cid } = await openedCircuit(h);
    await h.engine.startContainer(cid);
    h.advance((service(h.db, sid).circuit_retry_at as number) - h.nowSec()); // the retry time: the recovery is due
    expect((await tick(h)).applied.containersStopped).toBe(0);
    expect(h.engine.container(cid).state).toBe('running');
  });

  it('S7: a recovery that finds its container brought back by dockerd counts from its RestartCount, not from 0', async () => {
    const h = memoryHost();
    // The opening's stop did not stick: dockerd was shutting down (here: the stop failed).
    const { sid, cid } = await openedCircuit(h, { stopFails: true });
    h.advance(5);
    h.engine.restartEngine(); // dockerd restarted while the circuit was open: it brings the container back ...
    h.advance(1);
    h.engine.die(cid); // ... and it died once more while its circuit was open: RestartCount 1
    expect(h.engine.container(cid).restartCount).toBe(1);
    h.advance(30);
    expect(await recoverCircuit(h.deps, { serviceId: sid, opening: 1, escalation: 1, trigger: 'auto_recovery' })).toMatchObject({
      recovered: true,
      status: 'running',
    });
    expect(snapshotOf(h, sid)).toMatchObject({ restart_count: 1 });
    h.advance(5);
    expect((await tick(h)).applied.crashes).toBe(0); // the open circuit's death is not the closed one's
  });

  it('S7: a retried recovery that finds running the container its own first attempt started counts the deaths since (the soak)', async () => {
    const h = memoryHost();
    const { sid, cid } = await openedCircuit(h);
    h.advance((service(h.db, sid).circuit_retry_at as number) - h.nowSec());
    // The first attempt started the container, and its close did not commit (another writer held SQLite's lock) ...
    expect(await h.engine.startContainer(cid)).toBe(true);
    for (let i = 0; i < 3; i++) {
      h.advance(1);
      h.engine.die(cid); // ... and the crash loop went on: RestartCount 3
    }
    // The retry finds it running (the engine's 304): no dockerd restart since the opening, so the deaths are counted.
    expect(await recoverCircuit(h.deps, { serviceId: sid, opening: 1, escalation: 1, trigger: 'auto_recovery' })).toMatchObject({
      recovered: true,
    });
    expect(snapshotOf(h, sid)).toMatchObject({ restart_count: 0 });
    h.advance(2);
    expect((await tick(h)).applied.crashes).toBe(3);
  });

  it('S10: a retried recovery whose first start reached the engine only as dockerd came back counts the deaths since (the soak, run G)', async () => {
    const h = memoryHost();
    const { sid, cid } = await openedCircuit(h); // the opening's stop stuck: dockerd will not bring it back
    h.advance((service(h.db, sid).circuit_retry_at as number) - h.nowSec());
    const firstAttemptAtSec = h.nowSec(); // its start timed out: dockerd was down
    h.advance(20);
    h.engine.restartEngine();
    expect(h.engine.container(cid).state).not.toBe('running');
    expect(await h.engine.startContainer(cid)).toBe(true); // that start, held until the engine answered
    for (let i = 0; i < 2; i++) {
      h.advance(1);
      h.engine.die(cid); // the loop goes on: RestartCount 2, the engine started after the opening
    }
    h.advance(1);
    await recoverCircuit(h.deps, { serviceId: sid, opening: 1, escalation: 1, trigger: 'auto_recovery' }, firstAttemptAtSec);
    expect(snapshotOf(h, sid)).toMatchObject({ restart_count: 0, seen_at: firstAttemptAtSec });
    h.advance(5);
    expect((await tick(h)).applied.crashes).toBe(2);
  });

  it('S7: that retry dates its look from the first attempt, so a run Docker restarted in between is inspected (the soak, run D)', async () => {
    const h = memoryHost();
    const { sid, cid } = await openedCircuit(h);
    h.advance((service(h.db, sid).circuit_retry_at as number) - h.nowSec());
    const firstAttemptAtSec = h.nowSec();
    expect(await h.engine.startContainer(cid)).toBe(true); // the first attempt's start; its close does not commit
    h.advance(1);
    h.engine.die(cid);
    h.advance(1);
    h.engine.die(cid); // the loop's last death: the run Docker restarted now runs on
    h.advance(3); // the lock is let go; the retry comes 3 s into that run
    await recoverCircuit(h.deps, { serviceId: sid, opening: 1, escalation: 1, trigger: 'auto_recovery' }, firstAttemptAtSec);
    expect(snapshotOf(h, sid)).toMatchObject({ restart_count: 0, seen_at: firstAttemptAtSec });
    h.advance(30); // the list's "Up 33 seconds" would put that run before a look dated at the retry
    expect((await tick(h)).applied.crashes).toBe(2);
  });
});
