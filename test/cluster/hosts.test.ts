/**
 * Two keeper hosts, each with its own Docker engine and state DB, share one real cluster (temporal-server 1.29.1
 * on PostgreSQL with SQL visibility, mTLS frontend), as in production. Each host's schedules run its loops on
 * its own engine and DB; keeper's search attributes find their runs through SQL visibility; an operator resets a
 * circuit with the temporal CLI and its TLS flags; and a server SIGKILLed and restarted while a circuit timer is
 * pending loses nothing: the timer fires, the schedules resume, nothing is counted twice.
 */
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { lastLoopResult } from '../../src/db/loop-results';
import { openStateDb, type StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { createService, removeService } from '../../src/host/services';
import { ids, taskQueueFor } from '../../src/ids';
import { tenantNetworkName } from '../../src/names';
import { serviceAttributes } from '../../src/search-attributes';
import type { Settings } from '../../src/settings';
import { circuitBreaker } from '../../src/workflows';
import { circuitStateQuery } from '../../src/workflows/messages';
import type { TickSummary } from '../../src/contracts/reconcile';
import { startCluster, type TemporalCluster } from '../helpers/cluster';
import { startClusterHost, temporalTlsEnv, type ClusterHost } from '../helpers/cluster/keeper';
import { extraEngine } from '../helpers/engines';
import { tempDir, testDeps, testSettings, uniqueId, waitFor, WEB_IMAGE } from '../helpers/fixtures';
import { captureLog } from '../helpers/log';
import { quietRuntime } from '../helpers/temporal';
import { addService, addTenant, deployments, nowSec, service } from '../reconcile/rows';

interface Host {
  settings: Settings;
  db: StateDb;
  docker: DockerClient;
  keeper: ClusterHost;
  serviceId: string;
}

let cluster: TemporalCluster;
const hosts: Host[] = [];
const tenant = uniqueId('tn');

async function startHost(docker: DockerClient): Promise<Host> {
  const hostId = uniqueId('h-');
  const db = openStateDb(path.join(tempDir('keeper-cluster-'), 'state.db'));
  const settings = testSettings({
    hostId,
    db: db.name,
    reconcileInterval: '2s',
    gcInterval: '1h',
    gcFirstDelay: '1h',
    poolInterval: '1h',
    pooledTemplates: '',
    recovery: 'stop',
  });
  const keeper = await startClusterHost(
    settings,
    { db, docker, log: captureLog().log },
    temporalTlsEnv(cluster),
    inject('workflowBundlePath'),
  );
  const { id } = await createService(testDeps({ db, docker, settings }), { tenant, name: 'web', image: WEB_IMAGE });
  await keeper.host.ensureSchedules(keeper.client);
  return { settings, db, docker, keeper, serviceId: id };
}

beforeAll(async () => {
  quietRuntime();
  cluster = await startCluster();
  hosts.push(await startHost(new DockerClient()), await startHost(new DockerClient(extraEngine('cluster-b').dockerHost)));
}, 300_000);

afterAll(async () => {
  for (const h of hosts) {
    for (const loop of ['reconcile', 'gc', 'pool'] as const)
      await h.keeper.client.schedule
        .getHandle(ids.schedule(h.settings.hostId, loop))
        .delete()
        .catch(() => undefined);
    await h.keeper.stop();
    await removeService(testDeps(h), h.serviceId).catch(() => undefined);
    await h.docker.removeNetwork(tenantNetworkName(tenant)).catch(() => undefined);
    h.db.close();
  }
  await cluster?.stop();
}, 120_000);

/** The host's last reconcile tick started by its schedule, once one has finished after `afterSec`. */
function scheduledTickAfter(h: Host, afterSec: number) {
  return waitFor(
    `a scheduled tick of ${h.settings.hostId}`,
    () => {
      const r = lastLoopResult<TickSummary>(h.db, 'reconcile');
      return r && r.finishedAt >= afterSec && r.workflowId.startsWith(ids.schedule(h.settings.hostId, 'reconcile')) && r;
    },
    60_000,
  );
}

async function visible(client: Client, query: string): Promise<{ workflowId: string; type: string }[]> {
  const out: { workflowId: string; type: string }[] = [];
  for await (const w of client.workflow.list({ query })) out.push({ workflowId: w.workflowId, type: w.type });
  return out;
}

describe('two keeper hosts on one mTLS cluster', () => {
  it("runs each host's schedules on its own engine and DB, and finds their runs by KeeperHost and ServiceId", async () => {
    const t0 = nowSec();
    for (const h of hosts) {
      const tick = await scheduledTickAfter(h, t0);
      // Each tick saw its own service and nothing of the other host's (a foreign ah.service container would be split-brain).
      expect(tick.result).toMatchObject({ dockerReachable: true, checked: 1, crashes: 0, splitBrain: [], badInput: [] });
    }
    const [a, b] = hosts;
    const ofA = await visible(a.keeper.client, `KeeperHost="${a.settings.hostId}"`);
    expect(ofA.length).toBeGreaterThan(0);
    expect(ofA.every((w) => w.workflowId.startsWith(`keeper-${a.settings.hostId}-`))).toBe(true);
    const cli = await cluster.cli.run(['workflow', 'list', '--query', `KeeperHost="${b.settings.hostId}"`, '--output', 'json']);
    const ofB = JSON.parse(cli) as { execution: { workflowId: string } }[];
    expect(ofB.length).toBeGreaterThan(0);
    expect(ofB.every((w) => w.execution.workflowId.startsWith(`keeper-${b.settings.hostId}-`))).toBe(true);

    // An expired circuit in A's DB: A's next scheduled tick hands it to a circuit workflow tagged with its service.
    const expired = addService(a.db, addTenant(a.db), {
      status: 'crashed',
      circuitOpen: 1,
      circuitOpenCount: 1,
      circuitRetryAt: nowSec() - 5,
    });
    await waitFor('the expired circuit recovered', () => service(a.db, expired).circuit_open === 0, 60_000);
    const circuitRun = { workflowId: ids.circuit(a.settings.hostId, expired), type: 'circuitBreaker' };
    const runs = await waitFor(
      'its run in visibility',
      async () => {
        const found = await visible(a.keeper.client, `ServiceId="${expired}"`);
        return found.some((r) => r.workflowId === circuitRun.workflowId) && found;
      },
      30_000,
    );
    // The circuit's run, and the tick that handed the circuit over (a run that acts is found by its service too).
    expect(runs).toContainEqual(circuitRun);
    expect(runs.filter((r) => r.type !== 'circuitBreaker').every((r) => r.type === 'reconcileTick')).toBe(true);
  });

  it("closes a circuit on `temporal workflow signal … --name reset` sent with the CLI's TLS flags", async () => {
    const a = hosts[0];
    const sid = addService(a.db, addTenant(a.db), {
      status: 'crashed',
      circuitOpen: 1,
      circuitOpenCount: 1,
      circuitRetryAt: nowSec() + 3600,
    });
    const handle = await startCircuit(a, sid);
    await cluster.cli.run([
      'workflow',
      'signal',
      '--workflow-id',
      handle.workflowId,
      '--name',
      'reset',
      '--input',
      '"operator, by the temporal CLI"',
    ]);
    expect(await handle.result()).toMatchObject({ closedBy: 'reset', opening: 1, escalation: 1 });
    expect(service(a.db, sid).circuit_open).toBe(0);
    expect(deployments(a.db, sid).map((d) => d.trigger)).toEqual(['manual_reset']);
  });

  it('loses nothing when the server is SIGKILLed and restarted while a circuit timer is pending', async () => {
    const a = hosts[0];
    const retryAt = nowSec() + 15;
    const sid = addService(a.db, addTenant(a.db), { status: 'crashed', circuitOpen: 1, circuitOpenCount: 1, circuitRetryAt: retryAt });
    const handle = await startCircuit(a, sid);
    await cluster.killServer();
    await cluster.startServer();
    const restartedAt = nowSec();
    expect(await handle.result()).toMatchObject({ closedBy: 'timer', opening: 1, escalation: 1, status: 'stopped' });
    expect(nowSec()).toBeGreaterThanOrEqual(retryAt);
    expect(deployments(a.db, sid).map((d) => d.trigger)).toEqual(['auto_recovery']);
    for (const h of hosts) await scheduledTickAfter(h, restartedAt + 1); // the schedules run again
    for (const h of hosts) expect(service(h.db, h.serviceId)).toMatchObject({ status: 'running', crash_count: 0 });
    for (const h of hosts) expect(deployments(h.db, h.serviceId).map((d) => d.status)).toEqual(['running']);
  });
});

/** The circuit workflow for an open circuit in `h`'s DB, started as the tick would, and held. */
async function startCircuit(h: Host, serviceId: string) {
  const handle = await h.keeper.client.workflow.start(circuitBreaker, {
    workflowId: ids.circuit(h.settings.hostId, serviceId),
    taskQueue: taskQueueFor(h.settings.hostId),
    args: [{ serviceId }],
    typedSearchAttributes: serviceAttributes(h.settings.hostId, serviceId),
  });
  await waitFor('the circuit held', async () => (await handle.query(circuitStateQuery)).opening === 1, 30_000);
  return handle;
}
