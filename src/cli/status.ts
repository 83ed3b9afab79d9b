/**
 * `keeper status`: one look at this host from its state DB and engine, with no Temporal needed. Services with
 * their crash and circuit state, databases and environments, the pool, disk usage, and each loop's last result.
 */
import type { Command } from 'commander';
import { jsonOption, print, settingsFrom, table, withSettings } from './common';

function ago(unixSeconds: number, now: number): string {
  const s = Math.round(now - unixSeconds);
  return s < 0 ? `in ${-s}s` : `${s}s ago`;
}

function when(unixSeconds: number | null, now: number): string {
  if (!unixSeconds) return '-';
  return `${new Date(unixSeconds * 1000).toISOString().replace('.000Z', 'Z')} (${ago(unixSeconds, now)})`;
}

export async function readStatus(cmd: Command) {
  const settings = settingsFrom(cmd);
  const [{ openStateDb }, { serviceStatuses, countsByStatus }, { lastLoopResults }, { poolStats }, { readDiskGuard }, { DockerClient }, { readEventWatcherState }] =
    await Promise.all([
      import('../db/open'), import('../db/status'), import('../db/loop-results'), import('../activities/pool'),
      import('../activities/disk'), import('../docker/client'), import('../db/events'),
    ]);
  const db = openStateDb(settings.db, { create: false });
  try {
    const now = Math.floor(Date.now() / 1000);
    return {
      host: settings.hostId,
      now,
      services: serviceStatuses(db, now, settings.crashWindowMs / 1000),
      databases: countsByStatus(db, 'databases'),
      environments: countsByStatus(db, 'environments'),
      pool: poolStats(db, settings),
      disk: await readDiskGuard({ docker: new DockerClient(), settings }),
      loops: lastLoopResults(db),
      events: describeWatcher(readEventWatcherState(db, settings.hostId)),
    };
  } finally {
    db.close();
  }
}

/** What the event watcher is doing, in an operator's words; the periodic tick runs whatever it says. */
function describeWatcher(w: { state: string; lastError: string; stateSince: number } | undefined) {
  if (!w) return { state: 'not started', detail: 'no worker has run on this host yet: crashes are seen by the periodic tick' };
  const detail =
    w.state === 'following' ? 'crashes are seen within about a second'
      : w.state === 'stopped' ? 'the worker is stopped'
        : `falling back to the periodic tick (${w.lastError || 'no error recorded'})`;
  return { state: w.state, since: w.stateSince, detail };
}

type Status = Awaited<ReturnType<typeof readStatus>>;

function render(s: Status): string {
  const counts = (c: Record<string, number>) => Object.entries(c).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
  const out = [`host ${s.host}`, '', 'services'];
  out.push(
    s.services.length === 0
      ? '  none'
      : table(
          ['service', 'tenant', 'name', 'status', 'crashes', 'circuit', 'retry at', 'opened'],
          s.services.map((v) => [v.id, v.tenantId, v.name, v.status, v.crashesInWindow, v.circuitOpen ? 'OPEN' : 'closed',
            v.circuitOpen ? when(v.circuitRetryAt, s.now) : '-', v.circuitOpenCount]),
        ).replace(/^/gm, '  '),
  );
  out.push('', `databases      ${counts(s.databases)}`, `environments   ${counts(s.environments)}`);
  out.push(`pool           ${s.pool.templates.map((t) => `${t.name} ${t.ready}`).join(', ')} (total ${s.pool.total}/${s.pool.maxTotal})`);
  out.push('', `disk (${s.disk.level}; warn ${s.disk.warnAt}%, block ${s.disk.blockAt}%)`);
  out.push(table(['path', 'role', 'used'], s.disk.paths.map((p) => [p.path, p.role, p.usedPercent === null ? p.message : `${p.usedPercent.toFixed(1)}%`])).replace(/^/gm, '  '));
  out.push('', `events         ${s.events.state}: ${s.events.detail}`);
  out.push('', 'last runs');
  out.push(
    s.loops.length === 0
      ? '  none yet'
      : table(['loop', 'finished', 'result'], s.loops.map((l) => [l.loop, when(l.finishedAt, s.now), JSON.stringify(l.result).slice(0, 100)])).replace(/^/gm, '  '),
  );
  return out.join('\n');
}

export function registerStatusCommand(program: Command): void {
  withSettings(program.command('status'))
    .description('services, circuits, databases, environments, pool, disk and the last run of each loop')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      print(await readStatus(cmd), !!opts.json, render);
    });
}
