/**
 * The garbage collector's activities: one per resource class, so that one failing class does not stop the
 * others. Each observes (DB references and engine lists), plans through src/policy/gc.ts, and, unless it is a
 * dry run, removes exactly what the plan lists. Removing something already gone counts as success, so a
 * retried activity is harmless. An engine or DB error while observing skips the class or the resource; it
 * never makes anything an orphan.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { deleteSnapshotRow, listSnapshotRows, loadGcReferences } from '../db/gc';
import { recordLoopResult } from '../db/loop-results';
import { oneLine } from '../db/open';
import { DockerError, type ContainerUsage } from '../docker/client';
import { ignoreNotFound } from '../docker/errors';
import { createLogger, type Logger } from '../log';
import {
  needsStop,
  planBuildDirs,
  planContainers,
  planDanglingImages,
  planNetworks,
  planSnapshots,
  planVolumes,
  TENANT_NETWORK_PREFIX,
  TRAEFIK_CONTAINER,
  type AgeGuard,
  type BuildDirObs,
  type GcClass,
  type GcItem,
  type KeepReason,
  type NetworkObs,
  type Plan,
} from '../policy/gc';
import type { ActivityDeps } from './deps';

export interface GcClassInput {
  dryRun: boolean;
  /**
   * Containers that earlier steps of this sweep removed (or, in a dry run, would remove). They no longer hold
   * volumes, networks, images or snapshot refs, so a dry run plans what the real run will find.
   */
  goneContainers?: string[];
}

export interface GcFailure {
  name: string;
  error: string;
}

export interface GcClassResult {
  class: GcClass;
  dryRun: boolean;
  /** Dry run: what a real run would remove now. Real run: empty (see removed and failed). */
  planned: GcItem[];
  removed: GcItem[];
  /** Removals the engine or the file system refused; the resource stays for the next sweep. */
  failed: GcFailure[];
  /** Resources skipped because they could not be read (engine or DB error on that resource). */
  skipped: GcFailure[];
  kept: Partial<Record<KeepReason, number>>;
  /** Set when the class could not be observed at all: nothing of it was judged or removed. */
  error?: string;
}

/** How many removals run at once: enough to hide round trips, few enough not to crowd the engine. */
const REMOVAL_CONCURRENCY = 4;
const STOP_GRACE_SECONDS = 10;

export function createGcActivities({ db, docker, settings }: ActivityDeps, log: Logger = createLogger(settings.logFormat, { host: settings.hostId, loop: 'gc' })) {
  const guard = (): AgeGuard => ({ now: Math.floor(Date.now() / 1000), minAgeSeconds: Math.floor(settings.gcMinAgeMs / 1000) });

  /** The observe step of a class: any throw here means the class is skipped this sweep. */
  async function observed<T>(cls: GcClass, dryRun: boolean, observe: () => Promise<T> | T): Promise<T | GcClassResult> {
    try {
      return await observe();
    } catch (err) {
      const error = oneLine(err);
      log.warn('gc: class skipped, could not observe', { class: cls, error });
      return { class: cls, dryRun, planned: [], removed: [], failed: [], skipped: [], kept: {}, error };
    }
  }

  /** Carries out a plan (or only reports it, in a dry run), logging every removal with class, name, age and reason. */
  async function carryOut<T>(cls: GcClass, dryRun: boolean, plan: Plan<T>, skipped: GcFailure[], remove: (t: T) => Promise<void>): Promise<GcClassResult> {
    const result: GcClassResult = { class: cls, dryRun, planned: [], removed: [], failed: [], skipped, kept: plan.kept };
    if (dryRun) {
      result.planned = plan.remove.map((p) => p.item);
      for (const item of result.planned) log.info('gc: would remove', { class: cls, ...logged(item) });
      return result;
    }
    await forEachLimit(plan.remove, REMOVAL_CONCURRENCY, async ({ item, target }) => {
      try {
        await remove(target);
        result.removed.push(item);
        log.info('gc: removed', { class: cls, ...logged(item) });
      } catch (err) {
        result.failed.push({ name: item.name, error: oneLine(err) });
        log.warn('gc: removal failed, kept for the next sweep', { class: cls, ...logged(item), error: oneLine(err) });
      }
    });
    return result;
  }

  const goneSet = (input: GcClassInput) => new Set(input.goneContainers ?? []);
  const staying = (all: ContainerUsage[], gone: Set<string>) => all.filter((c) => !gone.has(c.id));

  return {
    /** ah containers of every kind that no row of any table references: stopped, then removed. */
    async removeOrphanContainers(input: GcClassInput): Promise<GcClassResult> {
      const seen = await observed('containers', input.dryRun, async () => ({
        refs: loadGcReferences(db),
        containers: await docker.listContainerUsage(),
      }));
      if ('class' in seen) return seen;
      const plan = planContainers(seen.containers, seen.refs, guard());
      return carryOut('containers', input.dryRun, plan, [], async (c) => {
        await ignoreNotFound(async () => {
          if (needsStop(c.state)) await docker.stopContainer(c.id, STOP_GRACE_SECONDS);
          await docker.removeContainer(c.id, { force: false });
        });
      });
    },

    /** ah-db-, ah-env-, ah-kanban- and ah-pool- volumes no row references and no staying container mounts. */
    async removeOrphanVolumes(input: GcClassInput): Promise<GcClassResult> {
      const seen = await observed('volumes', input.dryRun, async () => ({
        refs: loadGcReferences(db),
        volumes: await docker.listVolumes('ah-'),
        containers: await docker.listContainerUsage(),
      }));
      if ('class' in seen) return seen;
      const inUse = new Set(staying(seen.containers, goneSet(input)).flatMap((c) => c.volumes));
      const plan = planVolumes(seen.volumes, seen.refs, inUse, guard());
      // Never forced: the engine refuses a volume that a container uses, whatever the plan said.
      return carryOut('volumes', input.dryRun, plan, [], (v) => ignoreNotFound(() => docker.removeVolume(v.name)));
    },

    /** ah-tenant-* networks with nothing attached (read from an inspect, W-G1) and no container configured on them. */
    async removeEmptyTenantNetworks(input: GcClassInput): Promise<GcClassResult> {
      const seen = await observed('networks', input.dryRun, async () => ({
        networks: await docker.listNetworks(TENANT_NETWORK_PREFIX),
        containers: await docker.listContainerUsage(),
      }));
      if ('class' in seen) return seen;
      const gone = goneSet(input);
      const stay = staying(seen.containers, gone);
      const observations: NetworkObs[] = [];
      const skipped: GcFailure[] = [];
      for (const n of seen.networks) {
        try {
          const details = await docker.inspectNetwork(n.id);
          observations.push({
            id: n.id,
            name: details.name,
            createdAt: details.createdAt,
            attached: details.containers.filter((c) => !gone.has(c.id)).map((c) => c.name),
            configuredOn: stay.filter((c) => c.networks.includes(details.name) || c.networks.includes(n.id)).map((c) => c.name),
          });
        } catch (err) {
          if (err instanceof DockerError && err.isNotFound) continue; // removed meanwhile: nothing to do
          skipped.push({ name: n.name, error: oneLine(err) });
          log.warn('gc: network skipped, could not inspect', { class: 'networks', name: n.name, error: oneLine(err) });
        }
      }
      const plan = planNetworks(observations, guard());
      return carryOut('networks', input.dryRun, plan, skipped, (n) =>
        ignoreNotFound(async () => {
          if (n.attached.includes(TRAEFIK_CONTAINER)) await ignoreNotFound(() => docker.disconnectNetwork(n.id, TRAEFIK_CONTAINER));
          await docker.removeNetwork(n.id);
        }),
      );
    },

    /** Dangling images that carry an ah. label and that no staying container uses. */
    async removeDanglingImages(input: GcClassInput): Promise<GcClassResult> {
      const seen = await observed('images', input.dryRun, async () => ({
        images: await docker.listDanglingImages(),
        containers: await docker.listContainerUsage(),
      }));
      if ('class' in seen) return seen;
      const usedBy = new Set(staying(seen.containers, goneSet(input)).map((c) => c.imageId));
      const plan = planDanglingImages(seen.images, usedBy, guard());
      return carryOut('images', input.dryRun, plan, [], (i) => ignoreNotFound(() => docker.removeImage(i.id)));
    },

    /** Build directories older than --build-dir-max-age, inside the resolved base; symlinks are never followed. */
    async removeOldBuildDirs(input: GcClassInput): Promise<GcClassResult> {
      const seen = await observed('buildDirs', input.dryRun, () => observeBuildDirs(settings.buildDir));
      if ('class' in seen) return seen;
      const rule = { nowMs: Date.now(), maxAgeMs: settings.buildDirMaxAgeMs, realBase: seen.realBase, sep: path.sep };
      const plan = planBuildDirs(seen.entries, rule);
      return carryOut('buildDirs', input.dryRun, plan, seen.skipped, async (e) => {
        // Checked again right before removal: an entry swapped for a symlink since the plan is left alone.
        const now = observeEntry(seen.realBase, e.name);
        if (now === undefined) return; // already gone
        if (now.kind !== 'directory' || now.resolved !== e.resolved) throw new Error('changed since it was planned; left alone');
        fs.rmSync(e.path, { recursive: true, force: true });
      });
    },

    /** Snapshots over the per-service count (first) or the age limit, unless a service or container runs the image. */
    async removeExpiredSnapshots(input: GcClassInput): Promise<GcClassResult> {
      const seen = await observed('snapshots', input.dryRun, async () => ({
        rows: listSnapshotRows(db),
        refs: loadGcReferences(db),
        containers: await docker.listContainerUsage(),
      }));
      if ('class' in seen) return seen;
      const runningRefs = new Set([...seen.refs.serviceImages, ...staying(seen.containers, goneSet(input)).map((c) => c.image)]);
      const rule = {
        now: Math.floor(Date.now() / 1000),
        maxPerService: settings.snapshotMaxPerService,
        maxAgeSeconds: Math.floor(settings.snapshotMaxAgeMs / 1000),
      };
      const plan = planSnapshots(seen.rows, runningRefs, rule);
      return carryOut('snapshots', input.dryRun, plan, [], async (s) => {
        // The row goes only once its tag is gone, so a refused untag is retried next sweep (W-G8).
        if (s.imageRef) await ignoreNotFound(() => docker.removeImage(s.imageRef));
        deleteSnapshotRow(db, s.id, s.tenantId);
      });
    },

    /** Stores the sweep's summary as the gc loop's last result, for `keeper status`. */
    async recordGcSweep(summary: unknown): Promise<void> {
      let workflowId = '';
      try {
        workflowId = Context.current().info.workflowExecution?.workflowId ?? '';
      } catch {
        // called outside an activity context (tests)
      }
      recordLoopResult(db, { loop: 'gc', hostId: settings.hostId, workflowId, finishedAt: Math.floor(Date.now() / 1000), result: summary });
    },
  };
}

function logged(item: GcItem) {
  return { name: item.name, ...(item.id ? { id: item.id } : {}), ageSeconds: item.ageSeconds, reason: item.reason };
}


async function forEachLimit<T>(items: T[], limit: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

// ---- build directories: observation without following symlinks ----

function observeEntry(realBase: string, name: string): BuildDirObs | undefined {
  const full = path.join(realBase, name);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(full);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const kind = st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'directory' : 'other';
  let resolved: string | undefined;
  if (kind === 'directory') {
    try {
      resolved = fs.realpathSync(full);
    } catch {
      resolved = undefined;
    }
  }
  return { name, path: full, kind, mtimeMs: st.mtimeMs, resolved };
}

function observeBuildDirs(base: string): { realBase: string; entries: BuildDirObs[]; skipped: GcFailure[] } {
  if (!fs.existsSync(base)) return { realBase: path.resolve(base), entries: [], skipped: [] };
  // The base itself is resolved, so a base under a symlinked path still works (W-G10).
  const realBase = fs.realpathSync(base);
  const entries: BuildDirObs[] = [];
  const skipped: GcFailure[] = [];
  for (const name of fs.readdirSync(realBase)) {
    try {
      const e = observeEntry(realBase, name);
      if (e) entries.push(e);
    } catch (err) {
      skipped.push({ name, error: oneLine(err) });
    }
  }
  return { realBase, entries, skipped };
}
