/**
 * A circuit's openings on a real SQLite state DB and the in-memory engine: each opening's own number, monotonic
 * per service across escalation decay and apart from the escalation; the hold by opening; the hand-over that numbers
 * an opening keeper did not make; and recovery by a compare-and-set on the opening, so a run of an older opening
 * never closes a newer one. The migration from the previous release's tables is test/host/circuit-migration.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { heldOpening, unheldCircuits } from '../../src/db/circuit-holds';
import { currentOpening } from '../../src/db/circuit-openings';
import { listCircuits, readCircuit } from '../../src/db/services';
import { handOverCircuits, holdCircuit, holdSameOpening, recoverCircuit } from '../../src/host/circuit';
import { applyObservation } from '../../src/host/reconcile/apply';
import { housekeep } from '../../src/host/reconcile/housekeep';
import { observeHost } from '../../src/host/reconcile/observe';
import { crashPolicy } from '../../src/policy/deaths/decision';
import { addService, addTenant, deployments, service } from '../reconcile/rows';
import { memoryHost, runningService, type MemoryHost } from './world';

/** Two deaths open a circuit; it retries after 60 s at every escalation; escalation decays after an hour; recovery starts it. */
const SETTINGS = { crashThreshold: '2', circuitBackoff: '60s', escalationDecay: '1h', recovery: 'restart' };

async function tick(h: MemoryHost) {
  const policy = crashPolicy(h.settings);
  const kept = housekeep(h.deps, policy);
  const obs = await observeHost(h.deps, policy, h.nowSec());
  return { kept, applied: await applyObservation(h.deps, policy, obs) };
}

/** A running service, and keeper's first look at it. */
async function crashLooping(h: MemoryHost, tenant?: string) {
  const s = await runningService(h, { tenant });
  await tick(h);
  return s;
}

/** Two deaths in the window, and the tick that opens the circuit on them: the opening it reports. */
async function openIt(h: MemoryHost, s: { sid: string; cid: string }) {
  h.advance(20);
  h.engine.die(s.cid);
  h.advance(2);
  h.engine.die(s.cid);
  const { applied } = await tick(h);
  expect(applied.opened.map((o) => o.serviceId)).toEqual([s.sid]);
  return applied.opened[0];
}

/** What ah's own API does to a circuit behind keeper's back: reset it (closed, counters cleared, its container started), close it, open it. */
const ah = {
  reset: async (h: MemoryHost, s: { sid: string; cid: string }) => {
    h.db
      .prepare(
        `UPDATE services SET circuit_open = 0, circuit_retry_at = NULL, crash_count = 0, crash_window_start = NULL, status = 'running' WHERE id = ?`,
      )
      .run(s.sid);
    await h.engine.startContainer(s.cid);
    await tick(h); // keeper's look sees it running again
  },
  close: (h: MemoryHost, sid: string) =>
    h.db.prepare('UPDATE services SET circuit_open = 0, circuit_retry_at = NULL WHERE id = ?').run(sid),
  open: (h: MemoryHost, sid: string, escalation: number) =>
    h.db
      .prepare('UPDATE services SET circuit_open = 1, circuit_open_count = ?, circuit_retry_at = ? WHERE id = ?')
      .run(escalation, h.nowSec() + 3600, sid),
};

describe('circuit openings', () => {
  it('number each opening of a service anew, whatever its escalation: after a decay, escalation 1 again is opening 2', async () => {
    const h = memoryHost(SETTINGS);
    const a = await crashLooping(h);
    expect(await openIt(h, a)).toMatchObject({ opening: 1, escalation: 1 });
    await holdCircuit(h.deps, a.sid);
    h.advance(61);
    expect(await recoverCircuit(h.deps, { serviceId: a.sid, opening: 1, escalation: 1, trigger: 'auto_recovery' })).toMatchObject({
      recovered: true,
    });
    // Within the decay: escalation 2, opening 2.
    expect(await openIt(h, a)).toMatchObject({ opening: 2, escalation: 2 });
    await holdCircuit(h.deps, a.sid);
    h.advance(61);
    await recoverCircuit(h.deps, { serviceId: a.sid, opening: 2, escalation: 2, trigger: 'auto_recovery' });
    // An hour without an opening: escalation decays to 0, and the next opening is escalation 1, opening 3.
    h.advance(3600);
    expect((await tick(h)).kept.decayed).toBe(1);
    expect(service(h.db, a.sid).circuit_open_count).toBe(0);
    expect(await openIt(h, a)).toMatchObject({ opening: 3, escalation: 1 });
    // Per service: another service's first opening is its own opening 1.
    const b = await crashLooping(h, a.tenant);
    expect(await openIt(h, b)).toMatchObject({ opening: 1, escalation: 1 });
    expect(listCircuits(h.db).map((c) => [c.serviceId, c.opening, c.escalation])).toEqual(
      [
        [a.sid, 3, 1],
        [b.sid, 1, 1],
      ].sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
    );
  });

  it('hold an opening by its number: held, it is no longer handed over; a newer one is', async () => {
    const h = memoryHost(SETTINGS);
    const a = await crashLooping(h);
    await openIt(h, a);
    expect(unheldCircuits(h.db)).toEqual([{ serviceId: a.sid, opening: 1, escalation: 1, retryAt: expect.any(Number) }]);
    expect(await holdCircuit(h.deps, a.sid)).toMatchObject({ open: true, opening: 1, escalation: 1 });
    expect(heldOpening(h.db, a.sid)).toBe(1);
    expect(unheldCircuits(h.db)).toEqual([]);
    // ah closes opening 1 and opens the circuit again, at the same escalation: another opening, not numbered yet.
    ah.close(h, a.sid);
    h.advance(5);
    ah.open(h, a.sid, 1);
    expect(currentOpening(h.db, a.sid)).toBeUndefined();
    expect(unheldCircuits(h.db)).toEqual([{ serviceId: a.sid, escalation: 1, retryAt: h.nowSec() + 3600 }]);
    // The tick's hand-over numbers it (taken over), not held yet.
    expect(handOverCircuits(h.deps, unheldCircuits(h.db))).toEqual([
      { serviceId: a.sid, opening: 2, escalation: 1, retryAt: h.nowSec() + 3600, held: false },
    ]);
    expect(readCircuit(h.db, a.sid)).toMatchObject({ opening: 2, openedAt: null, takenOverAt: h.nowSec() });
    // Twice is the same number: the hand-over is idempotent.
    expect(handOverCircuits(h.deps, unheldCircuits(h.db)).map((c) => c.opening)).toEqual([2]);
  });

  it('number an opening keeper did not make when its workflow holds it first (a reset before any tick)', async () => {
    const h = memoryHost(SETTINGS);
    const sid = addService(h.db, addTenant(h.db), {
      status: 'crashed',
      circuitOpen: 1,
      circuitOpenCount: 3,
      circuitRetryAt: h.nowSec() + 60,
    });
    expect(readCircuit(h.db, sid)).toMatchObject({ open: true, opening: null, escalation: 3, openedAt: null });
    const held = await holdCircuit(h.deps, sid);
    expect(held).toMatchObject({ open: true, opening: 1, escalation: 3 });
    expect(held.remainingMs).toBeGreaterThan(58_000);
    expect(unheldCircuits(h.db)).toEqual([]);
  });

  it('close an opening by a compare-and-set on it: a run of the older opening never closes the newer one', async () => {
    const h = memoryHost(SETTINGS);
    const a = await crashLooping(h);
    await openIt(h, a);
    await holdCircuit(h.deps, a.sid);
    // ah resets opening 1 by hand; escalation decays; keeper opens the circuit again: opening 2 at escalation 1.
    await ah.reset(h, a);
    h.advance(3600);
    await tick(h);
    expect(await openIt(h, a)).toMatchObject({ opening: 2, escalation: 1 });
    // The run of opening 1 (its timer fires, or it is reset) recovers nothing, and learns the circuit reopened.
    const stale = { serviceId: a.sid, opening: 1, escalation: 1, trigger: 'manual_reset' as const };
    expect(await recoverCircuit(h.deps, stale)).toEqual({ recovered: false, reopened: true });
    expect(service(h.db, a.sid)).toMatchObject({ circuit_open: 1 });
    // Any number of recoveries of opening 2 close it once.
    const own = { ...stale, opening: 2, trigger: 'auto_recovery' as const };
    const attempts = await Promise.all([1, 2, 3].map(() => recoverCircuit(h.deps, own)));
    expect(attempts.filter((r) => r.recovered)).toHaveLength(1);
    expect(attempts.filter((r) => !r.recovered)).toEqual([{ recovered: false }, { recovered: false }]);
    expect(deployments(h.db, a.sid).filter((d) => d.trigger !== 'reconciler')).toEqual([
      expect.objectContaining({ status: 'running', trigger: 'auto_recovery' }),
    ]);
  });

  it('recover a run from before openings (it knows no number) by its escalation and retry time, never a newer opening', async () => {
    const h = memoryHost(SETTINGS);
    const a = await crashLooping(h);
    const first = await openIt(h, a);
    await holdCircuit(h.deps, a.sid);
    const legacy = { serviceId: a.sid, escalation: 1, retryAt: first.retryAt, trigger: 'auto_recovery' as const };
    // Opening 1 closed by ah; a newer one at escalation 1 again, another retry time: not the legacy run's.
    ah.close(h, a.sid);
    h.advance(5);
    ah.open(h, a.sid, 1);
    expect(await recoverCircuit(h.deps, legacy)).toEqual({ recovered: false, reopened: true });
    // Asked to recheck, it holds no opening that is not its own: it continues as new (see the workflow's tests).
    expect(holdSameOpening(h.deps, legacy)).toBeUndefined();
    expect(heldOpening(h.db, a.sid)).toBe(1);
    // An attempt scheduled before the upgrade sends no retry time: the opening its hold names, and that is opening 1.
    const { retryAt: _sent, ...scheduledBefore } = legacy;
    expect(await recoverCircuit(h.deps, scheduledBefore)).toEqual({ recovered: false, reopened: true });
    // Its own, still open: asked to recheck, it holds it (numbered now), and its recovery closes it.
    const own = { ...legacy, retryAt: h.nowSec() + 3600 };
    expect(holdSameOpening(h.deps, own)).toBe(2);
    expect(heldOpening(h.db, a.sid)).toBe(2);
    expect(await recoverCircuit(h.deps, scheduledBefore)).toMatchObject({ recovered: true, status: 'running' });
  });
});
