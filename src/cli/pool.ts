/**
 * `keeper pool refill --once | status | claim | drain`.
 *
 * refill runs the poolRefill workflow once. claim, status and drain work on this host's DB and engine directly:
 * a claim must be fast and must never wait for a worker. After a claim a refill is requested of the pool schedule
 * (unless paused; BUFFER_ONE, so a refill runs after any running one).
 */
import type { Command } from 'commander';
import type { HostDeps } from '../host/deps';
import { ids } from '../ids';
import { drainPool, poolStatus, type PoolStatusReport } from '../host/pool/admin';
import { ClaimRequestError, claimEnvironment, type ClaimResult } from '../host/pool/claim';
import { assertTenantRuntime } from '../host/tenant-runtime';
import { requestPoolRefill } from '../temporal/operations';
import { pullStateWords, refillWords } from './words';
import { isoSeconds } from '../time';
import { poolRefill } from '../workflows/poolRefill';
import { jsonOption, print, printOneShot, settingsFrom, table, UsageError, withHost, withKeeper, withSettings } from './common';
import { oneLine } from '../text';

function renderStatus(s: PoolStatusReport): string {
  return [
    table(
      ['TEMPLATE', 'ID', 'POOLED', 'READY'],
      s.templates.map((t) => [t.name, t.id, t.pooled ? 'yes' : 'no', t.ready]),
    ),
    `total ready ${s.total} (size ${s.size} per template, max ${s.maxTotal})${s.claimedRows ? `, ${s.claimedRows} claimed row(s)` : ''}`,
    ...(s.unknownTemplates.length ? [`unknown pooled templates: ${s.unknownTemplates.join(', ')}`] : []),
    ...s.pulls.map(
      (p) =>
        `pull ${p.image} (${p.templates.join(', ') || 'no template'}): ${pullStateWords(p, isoSeconds)}` +
        (p.ownerGone ? '; its process has ended, the next refill starts it again' : ''),
    ),
    s.lastRefill ? `last refill ${isoSeconds(s.lastRefill.finishedAt)}, ${refillWords(s.lastRefill.result)}` : 'last refill: none yet',
  ].join('\n');
}

function renderClaim(r: ClaimResult & { refill: string }): string {
  return [
    `${r.mode}  environment ${r.envId} (${r.tenant}/${r.name}, ${r.templateId})`,
    `container  ${r.containerName} (${r.containerId.slice(0, 12)}) on ${r.network}`,
    `volume     ${r.volume}`,
    ...(r.fallbackReason ? [`cold because ${r.fallbackReason}`] : []),
    ...(r.poolDetach === 'deferred' ? ['ah-pool    left by the refill (the pool network isolates its members)'] : []),
    `refill     ${r.refill}`,
  ].join('\n');
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
      const run = await withKeeper(settings, async (k) => {
        // Before any worker or workflow: the refill creates containers.
        await assertTenantRuntime({ docker: k.engine, settings: k.settings });
        return k.runWorkflowOnce(poolRefill, ids.once(settings.hostId, 'pool', Date.now()), []);
      });
      printOneShot(run, !!opts.json, (r) =>
        [
          `refill: ${refillWords(r)}`,
          `ready:  ${
            Object.entries(r.ready)
              .map(([t, n]) => `${t}=${n}`)
              .join(' ') || 'none'
          }`,
        ].join('\n'),
      );
      if (run.result.error) throw new Error(run.result.error);
    });

  withSettings(pool.command('status'))
    .description('ready containers per template, total, template image pulls, and the last refill')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      print(await withHost(settingsFrom(cmd), poolStatus), !!opts.json, renderStatus);
    });

  registerClaimCommand(pool);

  withSettings(pool.command('drain'))
    .description('remove every unclaimed pool container, volume and row (pause the pool schedule first)')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const report = await withHost(settingsFrom(cmd), drainPool);
      print(
        report,
        !!opts.json,
        (r) =>
          `drained: ${r.rowsDeleted} row(s), ${r.containersRemoved.length} container(s), ${r.volumesRemoved.length} volume(s)` +
          (r.errors.length ? `\nerrors: ${r.errors.join('; ')}` : ''),
      );
      if (report.errors.length) throw new Error(`drain incomplete: ${report.errors[0]}`);
    });
}

/** `keeper pool claim`: an environment from the pool, then a refill to replace what it took. */
function registerClaimCommand(pool: Command): void {
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
      const request = { tenant: opts.tenant, name: opts.name, template: opts.template, leaseSeconds: Number(opts.lease) };
      // The runtime is checked before the environment row is written; the claim itself stays one SQL update.
      const claim = async (deps: HostDeps) => (
        await assertTenantRuntime(deps),
        claimEnvironment({ ...deps, tenantRuntime: deps.settings.tenantRuntime }, request)
      );
      const claimed = await withKeeper(settings, async (k) => {
        const result = await claim(k.deps).catch((err: unknown) => {
          throw err instanceof ClaimRequestError ? new UsageError(err.message) : err;
        });
        // Best effort: the claim has succeeded; without a refill now, the pool's next look or run refills.
        const refill = await k
          .withOperatorClient((client) => requestPoolRefill(client, settings.hostId), 2000)
          .catch((err: Error) => `not requested (${oneLine(err)}); the next pool run refills`);
        return { ...result, refill };
      });
      print(claimed, !!opts.json, renderClaim);
    });
}
