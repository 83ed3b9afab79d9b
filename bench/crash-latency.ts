/**
 * Crash-to-commit latency, measured the same way by bench:detect and bench:cluster: services with running
 * containers, each seen once by a tick; then one kill per service (SIGKILL of its main process from the host, as
 * the kernel would; Docker's unless-stopped policy brings it back), timed until the service row shows the crash.
 */
import { readSnapshots } from '../src/db/container-snapshots';
import { requestReconcile } from '../src/temporal/operations';
import { crashContainer } from '../test/helpers/crash';
import { uniqueId, type EngineFixture } from '../test/helpers/fixtures';
import { addService, addTenant, runServiceContainer } from '../test/reconcile/rows';
import type { BenchHost } from './host';

const POLL_MS = 5;

export interface Mode {
  name: string;
  kills: number;
  latenciesMs: number[];
}

export async function waitUntil(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Services with running containers, each seen once by a tick (so the crash is a RestartCount delta). */
async function prepareServices(host: BenchHost, engine: EngineFixture, n: number): Promise<{ sid: string; cid: string }[]> {
  const tenant = addTenant(host.db);
  const out: { sid: string; cid: string }[] = [];
  for (let i = 0; i < n; i++) {
    const sid = uniqueId('svc');
    const cid = await runServiceContainer(engine, tenant, sid);
    addService(host.db, tenant, { containerId: cid }, sid);
    out.push({ sid, cid });
  }
  await requestReconcile(host.client, host.settings.hostId);
  await waitUntil(() => out.every((s) => readSnapshots(host.db).get(s.sid)?.state === 'running'), 60_000, 'a first look at every service');
  return out;
}

function crashCount(host: BenchHost, sid: string): number {
  return (host.db.prepare('SELECT crash_count FROM services WHERE id = ?').get(sid) as { crash_count: number }).crash_count;
}

export async function measureCrashLatency(
  host: BenchHost,
  engine: EngineFixture,
  mode: Mode,
  timeoutMs: number,
  randomPhaseMs = 0,
): Promise<void> {
  const services = await prepareServices(host, engine, mode.kills);
  for (const [i, s] of services.entries()) {
    // Tick-only: a crash just after a tick would always wait a whole interval; a random phase makes it fair.
    if (randomPhaseMs) await new Promise((r) => setTimeout(r, Math.random() * randomPhaseMs));
    const t0 = performance.now();
    await crashContainer(engine.docker, s.cid);
    await waitUntil(() => crashCount(host, s.sid) >= 1, timeoutMs, `the crash of ${s.sid}`);
    mode.latenciesMs.push(performance.now() - t0);
    process.stderr.write(`  ${mode.name} kill ${i + 1}/${mode.kills}: ${Math.round(mode.latenciesMs.at(-1)!)} ms\n`);
    // Let Docker restart it and the follow-up tick settle, so kills do not queue behind each other's ticks.
    await new Promise((r) => setTimeout(r, 500));
  }
}
