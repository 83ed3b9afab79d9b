/**
 * Circuit openings on the real stack: a keeper worker on the CLI dev server, real crash-looping containers on this
 * file's engine, a real SQLite file and a real webhook receiver on loopback. Ticks are run as the reconcile loop
 * runs them (reconcileTick on the host's queue). A circuit that opens again after its escalation decayed is a new
 * opening: its own alert keys, a workflow that holds it and its own timer that closes it. And a new opening made
 * while the workflow of an older one still waits (ah reset the old one by hand, a run with an hour to go) gets its
 * timer too: the tick signals that run, which continues as new to hold it.
 */
import { describe, expect, it } from 'vitest';
import { DockerClient } from '../../src/docker/client';
import { ids, taskQueueFor } from '../../src/ids';
import type { CircuitState } from '../../src/contracts/circuit';
import { circuitBreaker, reconcileTick } from '../../src/workflows';
import { circuitStateQuery } from '../../src/workflows/messages';
import { startService } from '../../src/host/services';
import { alertingHostsForFile, type AlertingHost } from '../helpers/alerting-hosts';
import { EngineFixture, testDeps, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerForFile } from '../helpers/temporal';
import type { WebhookReceiver } from '../helpers/webhook-receiver';
import { addService, addTenant, deployments, nowSec, runServiceContainer, service } from './rows';

const engine = new EngineFixture();
const env = devServerForFile(engine);
// A later test's host would see this one's containers as split-brain: they go after each test.
const hosts = alertingHostsForFile(env, () => engine.cleanup());

type Host = AlertingHost & { receiver: WebhookReceiver };

/** A keeper host alerting a receiver of its own, its worker polling until the test ends (no schedules: the test ticks). */
async function host(raw: Record<string, string>): Promise<Host> {
  const receiver = await hosts.receiver();
  // Two deaths open a circuit; recovery starts the kept container (unless a test says stop), which goes on crashing.
  const h = await hosts.host({ notifyWebhook: receiver.url(), crashThreshold: '2', recovery: 'restart', ...raw });
  return { ...h, receiver };
}

/** A service whose container exits 1 a moment after each start, restarted by Docker (unless-stopped). */
async function crashLooping(h: Host): Promise<{ sid: string; cid: string }> {
  const tenant = addTenant(h.db);
  const sid = uniqueId('svc');
  const cid = await runServiceContainer(engine, tenant, sid, { cmd: ['sh', '-c', 'sleep 0.2; exit 1'] });
  addService(h.db, tenant, { containerId: cid }, sid);
  return { sid, cid };
}

const tick = (h: Host) =>
  env.client.workflow.execute(reconcileTick, { taskQueue: taskQueueFor(h.settings.hostId), workflowId: uniqueId('tick-') });

/** Ticks, as the loop would, until the service's circuit is open on a new opening; its number. */
async function ticksUntilOpen(h: Host, sid: string, after = 0): Promise<number> {
  return waitFor(
    `the circuit of ${sid} open on an opening after ${after}`,
    async () => {
      await tick(h);
      const o = h.db.prepare('SELECT opening FROM keeper_circuit_openings WHERE service_id = ?').pluck().get(sid) as number | undefined;
      return service(h.db, sid).circuit_open === 1 && o !== undefined && o > after ? o : undefined;
    },
    90_000,
    500,
  );
}

const keysOf = (h: Host, sid: string) => h.receiver.uniqueKeys().filter((k) => k.includes(`/${sid}/`));
const key = (h: Host, sid: string, opening: number, kind: string) => `keeper/${h.settings.hostId}/${sid}/opening-${opening}/${kind}`;

describe('circuit openings on the real stack', () => {
  it('a circuit that opens again after its escalation decayed alerts under new keys, and its own workflow and timer close it', async () => {
    const h = await host({ circuitBackoff: '5s', escalationDecay: '6s', recovery: 'stop' });
    const { sid } = await crashLooping(h);
    expect(await ticksUntilOpen(h, sid)).toBe(1);
    expect(service(h.db, sid).circuit_open_count).toBe(1);
    const circuit = env.client.workflow.getHandle<typeof circuitBreaker>(ids.circuit(h.settings.hostId, sid));
    expect(await circuit.result()).toMatchObject({ opening: 1, escalation: 1, closedBy: 'timer', status: 'stopped' });

    // The escalation decays, 6 s after the opening with no other (the service stays stopped meanwhile).
    await waitFor(
      'the escalation to decay',
      async () => {
        await tick(h);
        return service(h.db, sid).circuit_open_count === 0;
      },
      60_000,
      500,
    );
    // The operator starts it again (`keeper service start`); it still crash-loops, and opens again.
    await startService(testDeps({ db: h.db, docker: new DockerClient(), settings: h.settings }), sid);
    expect(await ticksUntilOpen(h, sid, 1)).toBe(2);
    expect(service(h.db, sid).circuit_open_count).toBe(1); // escalation 1 again: what the old keys called "g1" once more
    const second = await waitFor(
      'a workflow holding opening 2',
      async () => {
        const s = await circuit.query(circuitStateQuery).catch(() => undefined);
        return s?.opening === 2 ? s : undefined;
      },
      30_000,
      250,
    );
    expect(second).toMatchObject({ phase: 'open', escalation: 1 });
    expect(await circuit.result()).toMatchObject({ opening: 2, escalation: 1, closedBy: 'timer', status: 'stopped' });
    expect(deployments(h.db, sid).filter((d) => d.trigger === 'auto_recovery')).toHaveLength(2);

    await waitFor('four alerts delivered', () => keysOf(h, sid).length === 4, 30_000);
    expect(keysOf(h, sid).sort()).toEqual(
      [
        key(h, sid, 1, 'circuit-opened'),
        key(h, sid, 1, 'circuit-closed'),
        key(h, sid, 2, 'circuit-opened'),
        key(h, sid, 2, 'circuit-closed'),
      ].sort(),
    );
  }, 240_000);

  it("a new opening made while an older opening's run still waits (ah reset it) gets its own timer and alert", async () => {
    const h = await host({ circuitBackoff: '5s' });
    const { sid, cid } = await crashLooping(h);
    // ah opened the circuit, for an hour: the tick takes it over (opening 1) and its workflow holds it.
    h.db
      .prepare(`UPDATE services SET status = 'crashed', circuit_open = 1, circuit_open_count = 1, circuit_retry_at = ? WHERE id = ?`)
      .run(nowSec() + 3600, sid);
    await tick(h);
    const circuit = env.client.workflow.getHandle<typeof circuitBreaker>(ids.circuit(h.settings.hostId, sid));
    await waitFor('opening 1 held, an hour to go', async () => (await circuit.query(circuitStateQuery)).opening === 1, 30_000, 250);
    const firstRun = (await circuit.describe()).runId;

    // ah resets it by hand (closed, counters cleared, its container started); the run of opening 1 still waits.
    h.db
      .prepare(
        `UPDATE services SET status = 'running', circuit_open = 0, circuit_retry_at = NULL, crash_count = 0, crash_window_start = NULL WHERE id = ?`,
      )
      .run(sid);
    await engine.docker.startContainer(cid);
    const reopenedAt = nowSec();
    expect(await ticksUntilOpen(h, sid, 1)).toBe(2);

    // The tick found that run holding the circuit's id and signalled it: it continued as new to hold opening 2,
    // which its own 5 s timer closes, long before opening 1's hour.
    const closed = (await circuit.result()) as CircuitState;
    expect(closed).toMatchObject({ opening: 2, closedBy: 'timer', status: 'running' });
    expect(nowSec() - reopenedAt).toBeLessThan(600);
    expect((await env.client.workflow.getHandle(circuit.workflowId, firstRun).describe()).status.name).toBe('CONTINUED_AS_NEW');
    expect(deployments(h.db, sid).filter((d) => d.trigger === 'auto_recovery')).toHaveLength(1);
    await waitFor('three alerts delivered', () => keysOf(h, sid).length === 3, 30_000);
    expect(keysOf(h, sid).sort()).toEqual(
      [key(h, sid, 1, 'circuit-opened'), key(h, sid, 2, 'circuit-opened'), key(h, sid, 2, 'circuit-closed')].sort(),
    );
  }, 240_000);
});
