/**
 * The GC loop's local look: a dry run of every class (exactly what `keeper gc --dry-run` plans, every age and
 * ownership guard included), in the worker, quietly. A resource that has just passed its age guard is found here
 * and swept within one look; a look that plans nothing costs no Temporal action. Crash records are left to the
 * sweeps the schedule makes: trimming a table by a row is no reason for a run of its own.
 */
import type { GcClass, GcClassInput, GcClassResult } from '../../contracts/gc';
import type { Logger } from '../../log';
import type { HostDeps } from '../deps';
import {
  removeBuildImages,
  removeDanglingImages,
  removeEmptyTenantNetworks,
  removeExpiredSnapshots,
  removeOldBuildDirs,
  removeOrphanContainers,
  removeOrphanVolumes,
} from '../gc/classes';
import type { Finding } from './finding';

type GcDeps = Pick<HostDeps, 'db' | 'docker' | 'settings' | 'log' | 'clock'>;
type ClassRun = (deps: GcDeps, input: GcClassInput) => Promise<GcClassResult>;

/** The classes after containers, which see the containers the sweep would remove as gone (as the sweep does). */
const AFTER_CONTAINERS: [GcClass, ClassRun][] = [
  ['volumes', removeOrphanVolumes],
  ['networks', removeEmptyTenantNetworks],
  ['images', removeDanglingImages],
  ['buildImages', removeBuildImages],
  ['buildDirs', removeOldBuildDirs],
  ['snapshots', removeExpiredSnapshots],
];

/** A dry run writes a line per planned resource; a look every minute must not. */
const QUIET: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => QUIET };

export async function lookForGc(deps: GcDeps): Promise<Finding> {
  const quiet = { ...deps, log: QUIET };
  const containers = await removeOrphanContainers(quiet, { dryRun: true });
  const input: GcClassInput = { dryRun: true, goneContainers: containers.planned.flatMap((c) => (c.id ? [c.id] : [])) };
  const rest = await Promise.all(AFTER_CONTAINERS.map(([, run]) => run(quiet, input)));
  const items = [containers, ...rest].flatMap((r) => r.planned.map((p) => `gc-${r.class}:${p.id?.slice(0, 12) ?? p.name}`));
  return { items, changes: [] };
}
