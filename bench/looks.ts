/**
 * `npm run bench:looks`: the worker's local looks (src/watch/), which make every path that Docker's event stream
 * does not cover at least as fast as ah's own loops, at no cost to the Temporal cluster.
 * - what the looks cost the host: engine API calls and CPU (keeper's and dockerd's) per look and per minute at their
 *   default intervals, with --services running services and a full pool, beside what ah's loops ask of the engine;
 * - how long each path takes at the default settings (--samples times each): a crash while the event stream is
 *   held open and silent, a `running` row whose container does not exist, a container stopped outside ah (after its
 *   --engine-stop-grace), a dead warm container, an orphan past its age guard, a crash while Temporal was down.
 *
 *   usage: DOCKER_HOST=$(bash scripts/extra-dockerd.sh start looks) npm run bench:looks [-- --services 200 --looks 20 --samples 3]
 */
import os from 'node:os';
import { quantile, arg, requireExplicitEngine } from './host';
import { ahCallsPerMinute, measureLookCosts, type LookCost } from './looks-cost';
import {
  crashDuringOutage,
  crashDuringSilence,
  deadWarmContainer,
  missingContainerRow,
  orphanPastAgeGuard,
  PATH_GC_MIN_AGE_SEC,
  PATH_GRACE_SEC,
  startPathHost,
  stopOutsideAh,
  type PathHost,
} from './looks-paths';

requireExplicitEngine('DOCKER_HOST=$(bash scripts/extra-dockerd.sh start looks) npm run bench:looks');

const perMinute = (c: LookCost, x: number) => (x * 60_000) / c.everyMs;

function costTable(services: number, costs: LookCost[]): string {
  const ah = ahCallsPerMinute(services, 2);
  const rows = costs.map(
    (c) =>
      `| ${c.loop === 'view' ? "a round's one container list" : `${c.loop}, given it`} | every ${(c.everyMs / 1000).toFixed(1)} s | ` +
      `${c.callsPerLook.toFixed(1)} | ${c.keeperCpuMsPerLook.toFixed(1)} | ${c.engineCpuMsPerLook.toFixed(1)} | ` +
      `${perMinute(c, c.callsPerLook).toFixed(1)} | ${perMinute(c, c.keeperCpuMsPerLook).toFixed(0)} | ${perMinute(c, c.engineCpuMsPerLook).toFixed(0)} | ` +
      `${c.loop === 'view' ? '' : ah[c.loop].toFixed(0)} |`,
  );
  const sum = (f: (c: LookCost) => number) => costs.reduce((n, c) => n + f(c), 0);
  const ahTotal = Object.values(ah).reduce((a, b) => a + b, 0);
  return [
    `the looks on a host with ${services} running services and a full pool of 2; load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores`,
    '',
    '| look | interval | engine calls per look | keeper CPU ms per look | dockerd CPU ms per look | engine calls a minute | keeper CPU ms a minute | dockerd CPU ms a minute | ah: engine calls a minute |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    `| **all** | | | | | **${sum((c) => perMinute(c, c.callsPerLook)).toFixed(1)}** | **${sum((c) => perMinute(c, c.keeperCpuMsPerLook)).toFixed(0)}** | **${sum((c) => perMinute(c, c.engineCpuMsPerLook)).toFixed(0)}** | **${ahTotal.toFixed(0)}** |`,
  ].join('\n');
}

const PATHS: { name: string; ah: string; run: (h: PathHost) => Promise<number> }[] = [
  { name: 'a crash while the event stream is held open and silent → committed', ah: '30 s', run: crashDuringSilence },
  { name: 'a `running` row whose container does not exist → handled', ah: '30 s', run: missingContainerRow },
  {
    name: `a container stopped outside ah → counted, after its grace (${PATH_GRACE_SEC} s here)`,
    ah: 'no grace: 30 s',
    run: stopOutsideAh,
  },
  {
    name: 'a warm container stopped outside keeper → pool whole again',
    ah: 'never: it stays ready (W-P10)',
    run: deadWarmContainer,
  },
  { name: `an orphan container → removed, after its age guard (${PATH_GC_MIN_AGE_SEC} s here)`, ah: '5 min', run: orphanPastAgeGuard },
  { name: 'a crash while Temporal was down → committed, after the server answers again', ah: '(no Temporal)', run: crashDuringOutage },
];

async function pathTable(samples: number): Promise<string> {
  const h = await startPathHost();
  const rows: string[] = [];
  try {
    for (const p of PATHS) {
      const times: number[] = [];
      for (let i = 0; i < samples; i++) {
        times.push(await p.run(h));
        process.stderr.write(`${p.name}: ${(times.at(-1)! / 1000).toFixed(1)} s\n`);
      }
      const sorted = [...times].sort((a, b) => a - b);
      rows.push(
        `| ${p.name} | ${p.ah} | ${samples} | ${(quantile(sorted, 0.5) / 1000).toFixed(1)} s | ${(sorted.at(-1)! / 1000).toFixed(1)} s |`,
      );
    }
  } finally {
    await h.stop();
  }
  return [
    `each path at the default settings (looks every 10 s, 15 s and 1 min; backstops 1 h, 6 h, 6 h); load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores`,
    '',
    '| path | ah | samples | median | max |',
    '|---|---|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

async function main(): Promise<void> {
  const services = Number(arg('services', '200'));
  const looks = Number(arg('looks', '20'));
  const samples = Number(arg('samples', '3'));
  const costs = await measureLookCosts(services, looks);
  process.stdout.write(costTable(services, costs) + '\n\n');
  if (samples > 0) process.stdout.write((await pathTable(samples)) + '\n');
}

main().catch((err) => {
  process.stderr.write(`bench:looks failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
