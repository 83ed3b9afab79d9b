/**
 * `keeper pool refill --once | status | claim | drain`.
 *
 * refill runs the poolRefill workflow once (through TEMPORAL_ADDRESS, or an in-process server). claim, status
 * and drain talk to SQLite and Docker directly: a claim must be fast and must never wait for a worker.
 * After a claim the pool schedule is triggered (unless paused; BUFFER_ONE, so a refill runs after any running one).
 */
import { Client, Connection } from '@temporalio/client';
import type { Command } from 'commander';
import { ClaimRequestError, claimEnvironment, type ClaimResult } from '../activities/claim';
import { drainPool, poolStats, type PoolRefillResult, type PoolStats } from '../activities/pool';
import { lastLoopResults, type LoopResult } from '../db/loop-results';
import { openStateDb } from '../db/open';
import { DockerClient } from '../docker/client';
import { ids } from '../shared';
import type { Settings } from '../settings';
import { operatorAddress } from '../temporal/client';
import { runWorkflowOnce } from '../temporal/run-once';
import { triggerLoop } from '../temporal/schedules';
import { jsonOption, print, settingsFrom, table, UsageError, withSettings } from './common';

/**
 * Best effort: the claim has already succeeded, so a failure here only means the next tick refills. A paused
 * pool schedule (e.g. before a drain) is not triggered.
 */
export async function triggerPoolRefillAt(settings: Settings): Promise<string> {
  const address = operatorAddress(settings); // TEMPORAL_ADDRESS, or the embedded server of `npm start`
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: '2s' });
    const client = new Client({ connection, namespace: settings.namespace });
    return (await triggerLoop(client, settings.hostId, 'pool', { unlessPaused: true }))
      ? 'triggered'
      : 'not triggered: the pool schedule is paused';
  } catch (err) {
    return `not triggered (${(err as Error).message.split('\n')[0]}); the next pool tick refills`;
  } finally {
    await connection?.close();
  }
}

export interface PoolStatusReport extends PoolStats {
  lastRefill: LoopResult<PoolRefillResult> | null;
}

export function readPoolStatus(settings: Settings): PoolStatusReport {
  const db = openStateDb(settings.db, { create: false });
  try {
    const last = lastLoopResults(db).find((r) => r.loop === 'pool') as LoopResult<PoolRefillResult> | undefined;
    return { ...poolStats(db, settings), lastRefill: last ?? null };
  } finally {
    db.close();
  }
}

function describeRefill(r: PoolRefillResult): string {
  if (r.blocked) return `blocked: ${r.disk.message}`;
  const made = r.created.filter((c) => c.outcome === 'created').length;
  const parts = [`${made} created`, `${r.prune.pruned.length} ghost(s) pruned`];
  if (r.detach?.detached.length) parts.push(`${r.detach.detached.length} claimed container(s) detached from ah-pool`);
  if (r.detach?.failed.length) parts.push(`${r.detach.failed.length} not detached: ${r.detach.failed[0].error}`);
  if (r.prune.kept.length) parts.push(`${r.prune.kept.length} kept after a transient error`);
  if (r.failed.length) parts.push(`${r.failed.length} failed: ${r.failed[0].error}`);
  if (r.disk.level !== 'ok') parts.push(`disk: ${r.disk.message}`);
  return parts.join(', ');
}

export function registerPoolCommand(program: Command): void {
  const pool = program.command('pool').description('the warm pool: refill, status, claim, drain');

  withSettings(pool.command('refill'))
    .description('run one refill now (the poolRefill workflow)')
    .option('--once', 'run a single refill and exit')
    .addOption(jsonOption())
    .action(async (opts: { once?: boolean; json?: boolean }, cmd: Command) => {
      if (!opts.once) throw new UsageError('pool refill needs --once (the pool schedule refills every --pool-interval)');
      const settings = settingsFrom(cmd);
      const result = await runWorkflowOnce<PoolRefillResult>(settings, 'poolRefill', `keeper-${settings.hostId}-pool-once`);
      print(result, !!opts.json, (r: PoolRefillResult) =>
        [`refill: ${describeRefill(r)}`, `ready:  ${Object.entries(r.ready).map(([t, n]) => `${t}=${n}`).join(' ') || 'none'}`].join('\n'),
      );
      if (result.error) throw new Error(result.error);
    });

  withSettings(pool.command('status'))
    .description('ready containers per template, total, and the last refill')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const status = readPoolStatus(settingsFrom(cmd));
      print(status, !!opts.json, (s: PoolStatusReport) =>
        [
          table(['TEMPLATE', 'ID', 'POOLED', 'READY'], s.templates.map((t) => [t.name, t.id, t.pooled ? 'yes' : 'no', t.ready])),
          `total ready ${s.total} (size ${s.size} per template, max ${s.maxTotal})${s.claimedRows ? `, ${s.claimedRows} claimed row(s)` : ''}`,
          ...(s.unknownTemplates.length ? [`unknown pooled templates: ${s.unknownTemplates.join(', ')}`] : []),
          s.lastRefill
            ? `last refill ${new Date(s.lastRefill.finishedAt * 1000).toISOString()}: ${describeRefill(s.lastRefill.result)}`
            : 'last refill: none yet',
        ].join('\n'),
      );
    });

  withSettings(pool.command('claim'))
    .description('create an environment from the pool (cold when the pool has none), then trigger a refill')
    .requiredOption('--tenant <tenant>', 'tenant id')
    .requiredOption('--name <name>', 'environment name')
    .option('--template <template>', 'template id or name', 'default')
    .option('--lease <seconds>', 'lease in seconds (300..86400)', '3600')
    .addOption(jsonOption())
    .action(async (opts: { tenant: string; name: string; template: string; lease: string; json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      if (!/^\d+$/.test(opts.lease)) throw new UsageError(`--lease must be a number of seconds, got "${opts.lease}"`);
      const db = openStateDb(settings.db, { create: false });
      let result: ClaimResult;
      try {
        result = await claimEnvironment({ db, docker: new DockerClient(), settings }, {
          tenant: opts.tenant, name: opts.name, template: opts.template, leaseSeconds: Number(opts.lease),
        });
      } catch (err) {
        if (err instanceof ClaimRequestError) throw new UsageError(err.message);
        throw err;
      } finally {
        db.close();
      }
      const refill = await triggerPoolRefillAt(settings);
      print({ ...result, refill }, !!opts.json, (r: ClaimResult & { refill: string }) =>
        [
          `${r.mode}  environment ${r.envId} (${r.tenant}/${r.name}, ${r.templateId})`,
          `container  ${r.containerName} (${r.containerId.slice(0, 12)}) on ${r.network}`,
          `volume     ${r.volume}`,
          ...(r.fallbackReason ? [`cold because ${r.fallbackReason}`] : []),
          ...(r.poolDetach === 'deferred' ? ['ah-pool    left by the refill (the pool network isolates its members)'] : []),
          `refill     ${r.refill}`,
        ].join('\n'),
      );
    });

  withSettings(pool.command('drain'))
    .description('remove every unclaimed pool container, volume and row (pause the pool schedule first)')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const db = openStateDb(settings.db, { create: false });
      try {
        const report = await drainPool({ db, docker: new DockerClient() });
        print(report, !!opts.json, (r) =>
          `drained: ${r.rowsDeleted} row(s), ${r.containersRemoved.length} container(s), ${r.volumesRemoved.length} volume(s)` +
          (r.errors.length ? `\nerrors: ${r.errors.join('; ')}` : ''),
        );
        if (report.errors.length) throw new Error(`drain incomplete: ${report.errors[0]}`);
      } finally {
        db.close();
      }
    });
}
