/**
 * `npm run bench:detect`: how long a crash takes to be committed in SQLite, with the event watcher and with
 * the schedule's tick alone, in the same run, on a real engine, a real keeper worker and its real schedule.
 *
 * Each kill crashes a different service's container (SIGKILL of its main process from the host, as the
 * kernel would; Docker's unless-stopped policy brings it back), so that no service reaches the circuit
 * threshold and Docker's restart backoff never grows. The clock runs from the kill until the service row
 * shows the crash. Tick-only mode uses the default 30 s interval and fewer kills, each at a random phase of
 * the interval (its latency is the wait for the next tick); the table says how many.
 *
 * With --list-lags, keeper and the bench reach the engine through a proxy whose container list shows each dead
 * container as it was before its death until something inspects it (Docker's list lags its `die` event by tens of
 * ms; this makes the lag as long as it can be): a run woken by the event must inspect, not trust the list.
 *
 *   usage: DOCKER_HOST=unix:///run/keeper-dockerd-bench/docker.sock npm run bench:detect [-- --kills 20 --tick-kills 6 --list-lags]
 */
import os from 'node:os';
import { DockerProxy } from '../test/helpers/docker-proxy';
import { EngineFixture } from '../test/helpers/fixtures';
import { measureCrashLatency, waitUntil, type Mode } from './crash-latency';
import { arg, quantile, requireExplicitEngine, startBenchHost } from './host';

requireExplicitEngine('DOCKER_HOST=unix:///run/keeper-dockerd-bench/docker.sock npm run bench:detect');

/** A proxy in front of the engine whose list lags deaths (see the header); DOCKER_HOST points at it from now on. */
async function laggingProxy(): Promise<DockerProxy> {
  const proxy = await DockerProxy.start();
  proxy.lagListAfterDeaths(5 * 60_000);
  process.env.DOCKER_HOST = proxy.dockerHost;
  return proxy;
}

function row(cells: (string | number)[]): string {
  return `| ${cells.join(' | ')} |`;
}

async function main(): Promise<void> {
  const kills = Number(arg('kills', '20'));
  const tickKills = Number(arg('tick-kills', '6'));
  const interval = arg('interval', '30s');
  const proxy = process.argv.includes('--list-lags') ? await laggingProxy() : undefined;
  const host = await startBenchHost({ reconcileInterval: interval });
  const engine = new EngineFixture();
  const events: Mode = { name: proxy ? `events, the list lagging each death until an inspect` : 'events', kills, latenciesMs: [] };
  const tickOnly: Mode = { name: `tick only (${interval} interval)`, kills: tickKills, latenciesMs: [] };
  try {
    const watcher = host.startWatcher();
    await waitUntil(() => watcher.stats.connects > 0, 10_000, 'the watcher to follow');
    await measureCrashLatency(host, engine, events, 10_000);
    await host.stopWatcher();
    // A list that lags until an inspect hides a death from a tick that has no event to inspect for: tick-only
    // latency is measured on the engine as it is.
    if (!proxy) await measureCrashLatency(host, engine, tickOnly, 3 * host.settings.reconcileIntervalMs, host.settings.reconcileIntervalMs);
  } finally {
    await engine.cleanup();
    await host.stop();
    await proxy?.close();
  }
  if (proxy) process.stderr.write(`list answers that showed a dead container running: ${proxy.staleListAnswers}\n`);
  const stats = (m: Mode) => {
    const s = [...m.latenciesMs].sort((a, b) => a - b);
    return { median: quantile(s, 0.5), p95: quantile(s, 0.95), max: s.at(-1) ?? NaN };
  };
  const e = stats(events);
  const t = stats(tickOnly);
  const ms = (x: number) => (x >= 10_000 ? `${(x / 1000).toFixed(1)} s` : `${Math.round(x)} ms`);
  const lines = [
    `crash → committed in SQLite (kill of a service container's main process; debounce ${host.settings.eventDebounceMs} ms; ` +
      `load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores)`,
    '',
    row(['mode', 'kills', 'median', 'p95', 'max']),
    row(['---', '---:', '---:', '---:', '---:']),
    row([events.name, events.kills, ms(e.median), ms(e.p95), ms(e.max)]),
    ...(proxy
      ? []
      : [
          row([tickOnly.name, tickOnly.kills, ms(t.median), ms(t.p95), ms(t.max)]),
          row(['ratio tick-only / events', '', `${(t.median / e.median).toFixed(1)}×`, `${(t.p95 / e.p95).toFixed(1)}×`, '']),
        ]),
    '',
    `targets with events: median < 1 s (${e.median < 1000 ? 'met' : 'MISSED'}), p95 < 2 s (${e.p95 < 2000 ? 'met' : 'MISSED'}), ` +
      `every crash within 1 s (${e.max < 1000 ? 'met' : 'MISSED'})`,
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((err) => {
  process.stderr.write(`bench:detect failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
