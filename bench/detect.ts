/**
 * `npm run bench:detect`: how long a crash takes to be committed in SQLite, with the event watcher and with
 * the periodic tick alone, in the same run, on a real engine, a real keeper worker and its real schedule.
 *
 * Each kill crashes a different service's container (SIGKILL of its main process from the host, as the
 * kernel would; Docker's unless-stopped policy brings it back), so that no service reaches the circuit
 * threshold and Docker's restart backoff never grows. The clock runs from the kill until the service row
 * shows the crash. Tick-only mode uses the default 30 s interval and fewer kills, each at a random phase of
 * the interval (its latency is the wait for the next tick); the table says how many.
 *
 *   usage: DOCKER_HOST=unix:///run/keeper-dockerd-bench/docker.sock npm run bench:detect [-- --kills 20 --tick-kills 6]
 */
import os from 'node:os';
import { readLooks } from '../src/db/looks';
import { crashContainer } from '../test/helpers/crash';
import { EngineFixture, uniqueId } from '../test/helpers/fixtures';
import { addService, addTenant, runServiceContainer } from '../test/reconcile/rows';
import { arg, quantile, requireExplicitEngine, startBenchHost, type BenchHost } from './host';
import { triggerReconcile } from '../src/temporal/schedules';

requireExplicitEngine('DOCKER_HOST=unix:///run/keeper-dockerd-bench/docker.sock npm run bench:detect');

const POLL_MS = 5;

interface Mode {
  name: string;
  kills: number;
  latenciesMs: number[];
}

async function waitUntil(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
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
  await triggerReconcile(host.client, host.settings.hostId);
  await waitUntil(() => out.every((s) => readLooks(host.db).get(s.sid)?.state === 'running'), 60_000, 'a first look at every service');
  return out;
}

function crashCount(host: BenchHost, sid: string): number {
  return (host.db.prepare('SELECT crash_count FROM services WHERE id = ?').get(sid) as { crash_count: number }).crash_count;
}

async function measure(host: BenchHost, engine: EngineFixture, mode: Mode, timeoutMs: number, randomPhaseMs = 0): Promise<void> {
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

function row(cells: (string | number)[]): string {
  return `| ${cells.join(' | ')} |`;
}

async function main(): Promise<void> {
  const kills = Number(arg('kills', '20'));
  const tickKills = Number(arg('tick-kills', '6'));
  const interval = arg('interval', '30s');
  const host = await startBenchHost({ reconcileInterval: interval });
  const engine = new EngineFixture();
  const events: Mode = { name: 'events', kills, latenciesMs: [] };
  const tickOnly: Mode = { name: `tick only (${interval} interval)`, kills: tickKills, latenciesMs: [] };
  try {
    const watcher = host.startWatcher();
    await waitUntil(() => watcher.stats.connects > 0, 10_000, 'the watcher to follow');
    await measure(host, engine, events, 10_000);
    await host.stopWatcher();
    await measure(host, engine, tickOnly, 3 * host.settings.reconcileIntervalMs, host.settings.reconcileIntervalMs);
  } finally {
    await engine.cleanup();
    await host.stop();
  }
  const stats = (m: Mode) => {
    const s = [...m.latenciesMs].sort((a, b) => a - b);
    return { median: quantile(s, 0.5), p95: quantile(s, 0.95), max: s.at(-1) ?? NaN };
  };
  const e = stats(events);
  const t = stats(tickOnly);
  const ms = (x: number) => (x >= 10_000 ? `${(x / 1000).toFixed(1)} s` : `${Math.round(x)} ms`);
  const lines = [
    `crash → committed in SQLite (kill of a service container's main process; debounce ${host.settings.eventDebounceMs} ms; `
      + `load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores)`,
    '',
    row(['mode', 'kills', 'median', 'p95', 'max']),
    row(['---', '---:', '---:', '---:', '---:']),
    row([events.name, events.kills, ms(e.median), ms(e.p95), ms(e.max)]),
    row([tickOnly.name, tickOnly.kills, ms(t.median), ms(t.p95), ms(t.max)]),
    row(['ratio tick-only / events', '', `${(t.median / e.median).toFixed(1)}×`, `${(t.p95 / e.p95).toFixed(1)}×`, '']),
    '',
    `targets with events: median < 1 s (${e.median < 1000 ? 'met' : 'MISSED'}), p95 < 2 s (${e.p95 < 2000 ? 'met' : 'MISSED'})`,
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((err) => {
  process.stderr.write(`bench:detect failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
