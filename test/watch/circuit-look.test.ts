/**
 * Circuits, in a real `keeper worker` at the default settings on a real engine behind a fault proxy: an open circuit
 * whose workflow never started (ah opened it, or a worker died between the opening and the start, however long
 * ago) gets its workflow and timer; an open circuit's container that runs (its stop at the opening failed) is
 * stopped again until it is down.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ids } from '../../src/ids';
import { waitFor } from '../helpers/fixtures';
import { addService, addTenant, nowSec, runServiceContainer } from '../reconcile/rows';
import { watchedHost, type WatchedHost } from './world';

const BOUND_MS = 120_000;
let h: WatchedHost;

beforeAll(async () => {
  h = await watchedHost('look-circuit');
}, 180_000);
afterAll(async () => h?.stop(), 120_000);

const held = (sid: string) =>
  h.db.prepare('SELECT opening FROM keeper_circuit_holds WHERE service_id = ?').pluck().get(sid) as number | undefined;

async function circuitRunning(sid: string): Promise<boolean> {
  const d = await h.client.workflow.getHandle(ids.circuit(h.hostId, sid)).describe();
  return d.status.name === 'RUNNING';
}

describe("open circuits, from the worker's looks", () => {
  it('an open circuit that no workflow holds gets its workflow and its timer', async () => {
    const tenant = addTenant(h.db);
    const sid = `svc-${Math.random().toString(36).slice(2, 8)}`;
    const cid = await runServiceContainer(h.fixture, tenant, sid, {}, false);
    // Opened two hours ago by ah (no workflow, no hold), retrying in an hour.
    addService(
      h.db,
      tenant,
      { containerId: cid, status: 'crashed', circuitOpen: 1, circuitOpenCount: 2, circuitRetryAt: nowSec() + 3600 },
      sid,
    );
    await waitFor('its circuit workflow', () => circuitRunning(sid), BOUND_MS, 500);
    // Taken over: keeper numbers ah's opening (its first of this service: opening 1) and its workflow holds it.
    await waitFor('its hold recorded', () => held(sid) === 1, BOUND_MS, 250);
  }, 200_000);

  it("an open circuit's running container whose stop fails is stopped again until it is down", async () => {
    const tenant = addTenant(h.db);
    const sid = `svc-${Math.random().toString(36).slice(2, 8)}`;
    const cid = await runServiceContainer(h.fixture, tenant, sid);
    h.proxy.fail({ method: 'POST', path: new RegExp(`^/containers/${cid}/stop$`), status: 500, times: 3 });
    addService(
      h.db,
      tenant,
      { containerId: cid, status: 'crashed', circuitOpen: 1, circuitOpenCount: 1, circuitRetryAt: nowSec() + 3600 },
      sid,
    );
    await waitFor('the container down', async () => (await h.fixture.docker.inspectContainer(cid)).status === 'exited', BOUND_MS, 500);
    const stops = h.proxy.requests.filter((r) => r.method === 'POST' && r.path === `/containers/${cid}/stop`);
    expect(stops.filter((r) => r.injected)).toHaveLength(3);
    expect(stops.length).toBeGreaterThanOrEqual(4);
  }, 200_000);
});
