/**
 * GC eligibility: pure rules that decide, from what was observed, which resources a sweep removes and why
 * every other one is kept. Dry runs and real runs both plan through these functions, so a dry run lists
 * exactly what a real run would remove at that moment.
 *
 * The rules are conservative on purpose (keeper "never deletes what it does not own"):
 * - ownership first: a container needs an `ah.service` label or a known `ah.type`, a volume one of the four
 *   ah volume prefixes, a network the `ah-tenant-` prefix, an image an `ah.` label;
 * - then references: a row of ANY table (services, databases, environments, kanbans, warm_pool) protects a
 *   container or volume whatever its kind (W-G2, W-G3);
 * - then use: a volume mounted by, or a network configured on, any container that stays is kept;
 * - then the age guard, for containers, volumes, networks and images alike; an unknown age counts as young.
 */

import {
  BUILD_IMAGE_REPO_PREFIX,
  buildImageRepo,
  LABEL,
  LABEL_PREFIX,
  POOL_VOLUME_PREFIX,
  TENANT_NETWORK_PREFIX,
  TRAEFIK_CONTAINER,
  VOLUME_PREFIXES,
} from '../names';
import type { GcClassInput, GcClassListed, GcClassResult, GcItem, KeepReason } from '../contracts/gc';

export type Verdict = { remove: true; reason: string } | { remove: false; keep: KeepReason };

export interface Plan<T> {
  remove: { item: GcItem; target: T }[];
  kept: Partial<Record<KeepReason, number>>;
}

export interface AgeGuard {
  /** Unix seconds. */
  now: number;
  /** Resources younger than this are kept; 0 turns the guard off. */
  minAgeSeconds: number;
}

export const CONTAINER_TYPES = ['database', 'environment', 'kanban', 'warm-pool'] as const;

/** What every table of the state DB references, loaded in one query per sweep class. */
export interface References {
  containerIds: Set<string>;
  volumeNames: Set<string>;
  /** services.image of every service row. */
  serviceImages: Set<string>;
}

/**
 * True if any row references the container: by full id, by an id prefix of 12+ characters (ah's tests and
 * older rows hold short ids), or by name.
 */
export function isContainerReferenced(refs: References, id: string, name: string): boolean {
  if (refs.containerIds.has(id) || refs.containerIds.has(name)) return true;
  for (const ref of refs.containerIds) if (ref.length >= 12 && id.startsWith(ref)) return true;
  return false;
}

export function ageSeconds(createdAt: number, now: number): number {
  return createdAt > 0 ? Math.max(0, now - createdAt) : 0;
}

function ageVerdict(createdAt: number, guard: AgeGuard): KeepReason | undefined {
  if (guard.minAgeSeconds <= 0) return undefined;
  if (!(createdAt > 0)) return 'age-unknown';
  return guard.now - createdAt < guard.minAgeSeconds ? 'young' : undefined;
}

/** Judges each target: a removal described by `describe`, or a count of why it is kept. */
export function planEach<T>(targets: T[], judge: (t: T) => Verdict, describe: (t: T, reason: string) => GcItem): Plan<T> {
  const out: Plan<T> = { remove: [], kept: {} };
  for (const t of targets) {
    const v = judge(t);
    if (v.remove) out.remove.push({ item: describe(t, v.reason), target: t });
    else out.kept[v.keep] = (out.kept[v.keep] ?? 0) + 1;
  }
  return out;
}

// ---- containers ----

export interface ContainerObs {
  id: string;
  name: string;
  labels: Record<string, string>;
  state: string;
  createdAt: number;
}

export type ContainerKind = 'service' | (typeof CONTAINER_TYPES)[number];

/** The kind of ah container GC may collect, or undefined for anything else (never touched). */
export function containerKind(labels: Record<string, string>): ContainerKind | undefined {
  if (labels[LABEL.service] !== undefined) return 'service';
  const type = labels[LABEL.type];
  return (CONTAINER_TYPES as readonly string[]).includes(type) ? (type as ContainerKind) : undefined;
}

export function judgeContainer(c: ContainerObs, refs: References, guard: AgeGuard): Verdict {
  const kind = containerKind(c.labels);
  if (!kind) return { remove: false, keep: 'foreign' };
  if (isContainerReferenced(refs, c.id, c.name)) return { remove: false, keep: 'referenced' };
  const young = ageVerdict(c.createdAt, guard);
  if (young) return { remove: false, keep: young };
  return {
    remove: true,
    reason:
      kind === 'warm-pool'
        ? 'warm-pool leftover: no pool or environment row references it'
        : `orphan ${kind} container: no row of any table references it`,
  };
}

export function planContainers(containers: ContainerObs[], refs: References, guard: AgeGuard): Plan<ContainerObs> {
  return planEach(
    containers,
    (c) => judgeContainer(c, refs, guard),
    (c, reason) => ({ name: c.name, id: c.id, ageSeconds: ageSeconds(c.createdAt, guard.now), reason }),
  );
}

/** A container that is not stopped must be stopped before a plain (unforced) remove. */
export function needsStop(state: string): boolean {
  return !['created', 'exited', 'dead'].includes(state);
}

// ---- volumes ----

export interface VolumeObs {
  name: string;
  createdAt: number;
}

export function isAhVolume(name: string): boolean {
  return VOLUME_PREFIXES.some((p) => name.startsWith(p));
}

/** `inUse`: names of volumes mounted by a container that stays (Docker would refuse to remove them). */
export function judgeVolume(v: VolumeObs, refs: References, inUse: Set<string>, guard: AgeGuard): Verdict {
  if (!isAhVolume(v.name)) return { remove: false, keep: 'foreign' };
  if (refs.volumeNames.has(v.name)) return { remove: false, keep: 'referenced' };
  if (inUse.has(v.name)) return { remove: false, keep: 'in-use' };
  const young = ageVerdict(v.createdAt, guard);
  if (young) return { remove: false, keep: young };
  return {
    remove: true,
    reason: v.name.startsWith(POOL_VOLUME_PREFIX)
      ? 'warm-pool leftover: no pool or environment row references it'
      : 'orphan volume: no row of any table references it',
  };
}

export function planVolumes(volumes: VolumeObs[], refs: References, inUse: Set<string>, guard: AgeGuard): Plan<VolumeObs> {
  return planEach(
    volumes,
    (v) => judgeVolume(v, refs, inUse, guard),
    (v, reason) => ({ name: v.name, ageSeconds: ageSeconds(v.createdAt, guard.now), reason }),
  );
}

// ---- networks ----

export interface NetworkObs {
  id: string;
  name: string;
  createdAt: number;
  /** Containers attached, from a network inspect (W-G1), minus those the sweep removes. */
  attached: string[];
  /** Containers of any state configured on the network (from the container list), minus those removed. */
  configuredOn: string[];
}

export function judgeNetwork(n: NetworkObs, guard: AgeGuard): Verdict {
  if (!n.name.startsWith(TENANT_NETWORK_PREFIX)) return { remove: false, keep: 'foreign' };
  // Traefik joins every tenant network to route to it; alone it does not make the network used.
  if (n.attached.some((c) => c !== TRAEFIK_CONTAINER)) return { remove: false, keep: 'not-empty' };
  // A stopped container does not show in the inspect, but it needs its network to start again.
  if (n.configuredOn.some((c) => c !== TRAEFIK_CONTAINER)) return { remove: false, keep: 'in-use' };
  const young = ageVerdict(n.createdAt, guard);
  if (young) return { remove: false, keep: young };
  return { remove: true, reason: 'empty tenant network: no container attached or configured on it' };
}

export function planNetworks(networks: NetworkObs[], guard: AgeGuard): Plan<NetworkObs> {
  return planEach(
    networks,
    (n) => judgeNetwork(n, guard),
    (n, reason) => ({ name: n.name, id: n.id, ageSeconds: ageSeconds(n.createdAt, guard.now), reason }),
  );
}

// ---- dangling images ----

export interface ImageObs {
  id: string;
  labels: Record<string, string>;
  createdAt: number;
}

export function hasAhLabel(labels: Record<string, string>): boolean {
  return Object.keys(labels).some((k) => k.startsWith(LABEL_PREFIX));
}

/** `usedBy`: image ids of containers that stay. Only ah-labelled dangling images are ah's to remove. */
export function judgeDanglingImage(img: ImageObs, usedBy: Set<string>, guard: AgeGuard): Verdict {
  if (!hasAhLabel(img.labels)) return { remove: false, keep: 'foreign' };
  if (usedBy.has(img.id)) return { remove: false, keep: 'in-use' };
  const young = ageVerdict(img.createdAt, guard);
  if (young) return { remove: false, keep: young };
  return { remove: true, reason: 'dangling ah image: untagged and used by no container' };
}

export function planDanglingImages(images: ImageObs[], usedBy: Set<string>, guard: AgeGuard): Plan<ImageObs> {
  return planEach(
    images,
    (i) => judgeDanglingImage(i, usedBy, guard),
    (i, reason) => ({ name: i.id.replace(/^sha256:/, '').slice(0, 12), id: i.id, ageSeconds: ageSeconds(i.createdAt, guard.now), reason }),
  );
}

// ---- build directories ----

export interface BuildDirObs {
  name: string;
  path: string;
  kind: 'directory' | 'symlink' | 'other';
  mtimeMs: number;
  /** realpath of the entry; undefined when it could not be resolved. */
  resolved: string | undefined;
}

export interface BuildDirRule {
  nowMs: number;
  maxAgeMs: number;
  /** realpath of the base directory. */
  realBase: string;
  sep: string;
}

export function judgeBuildDir(e: BuildDirObs, rule: BuildDirRule): Verdict {
  if (e.name.startsWith('.')) return { remove: false, keep: 'hidden' };
  if (e.kind === 'symlink') return { remove: false, keep: 'symlink' };
  if (e.kind !== 'directory') return { remove: false, keep: 'not-a-directory' };
  if (rule.nowMs - e.mtimeMs < rule.maxAgeMs) return { remove: false, keep: 'young' };
  if (!e.resolved || !e.resolved.startsWith(rule.realBase + rule.sep)) return { remove: false, keep: 'outside-base' };
  return { remove: true, reason: `build directory older than ${Math.round(rule.maxAgeMs / 1000)}s` };
}

export function planBuildDirs(entries: BuildDirObs[], rule: BuildDirRule): Plan<BuildDirObs> {
  return planEach(
    entries,
    (e) => judgeBuildDir(e, rule),
    (e, reason) => ({ name: e.name, ageSeconds: Math.max(0, Math.floor((rule.nowMs - e.mtimeMs) / 1000)), reason }),
  );
}

// ---- retention of rows kept per service (snapshots, crash records) ----

/** A row kept under a per-service retention rule. */
export interface RetainedRow {
  id: string;
  serviceId: string;
  createdAt: number; // unix seconds
}

export interface SnapshotRow extends RetainedRow {
  tenantId: string;
  imageRef: string;
}

export interface RetentionRule {
  now: number; // unix seconds
  /** Newest rows kept per service; 0 turns the count pass off. */
  maxPerService: number;
  /** Rows strictly older than this are removed; 0 turns the age pass off. */
  maxAgeSeconds: number;
}

const DIGITS = /^\d+$/;

/**
 * Oldest first; ties (one-second resolution) broken by id, so the order is defined. Crash record ids are
 * AUTOINCREMENT integers, so two of them compare as numbers (as text, record 10 would sort before record 9).
 */
function oldestFirst(a: RetainedRow, b: RetainedRow): number {
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  if (DIGITS.test(a.id) && DIGITS.test(b.id) && a.id.length !== b.id.length) return a.id.length - b.id.length;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The reason of each row over a limit, by id: the count pass first (per service, the oldest beyond the count), then age. */
function overLimits(rows: RetainedRow[], rule: RetentionRule, what: string): Map<string, string> {
  const chosen = new Map<string, string>(); // id -> reason
  if (rule.maxPerService > 0) {
    const byService = new Map<string, RetainedRow[]>();
    for (const r of rows) {
      const list = byService.get(r.serviceId);
      if (list) list.push(r);
      else byService.set(r.serviceId, [r]);
    }
    for (const list of byService.values()) {
      const excess = list.length - rule.maxPerService;
      if (excess <= 0) continue;
      for (const r of [...list].sort(oldestFirst).slice(0, excess)) {
        chosen.set(r.id, `over the limit of ${rule.maxPerService} ${what} for service ${r.serviceId}`);
      }
    }
  }
  if (rule.maxAgeSeconds > 0) {
    const cutoff = rule.now - rule.maxAgeSeconds;
    for (const r of rows) {
      if (!chosen.has(r.id) && r.createdAt < cutoff) chosen.set(r.id, `older than ${rule.maxAgeSeconds}s`);
    }
  }
  return chosen;
}

/** What a retention is of: its rows' word in reasons, what keeps an over-limit row, and how a removal is named. */
interface RetentionOf<T> {
  what: string;
  inUse?: (r: T) => boolean;
  nameOf?: (r: T) => string;
}

/** Plans a per-service retention: rows over a limit go, unless `inUse` keeps one (it is then not replaced). */
function planRetention<T extends RetainedRow>(rows: T[], rule: RetentionRule, of: RetentionOf<T>): Plan<T> {
  const out: Plan<T> = { remove: [], kept: {} };
  const chosen = overLimits(rows, rule, of.what);
  for (const r of [...rows].sort(oldestFirst)) {
    const reason = chosen.get(r.id);
    let keep: KeepReason | undefined;
    if (!reason) keep = 'within-limits';
    else if (of.inUse?.(r)) keep = 'image-in-use';
    if (keep) out.kept[keep] = (out.kept[keep] ?? 0) + 1;
    else
      out.remove.push({
        item: { name: of.nameOf?.(r) ?? r.id, ageSeconds: ageSeconds(r.createdAt, rule.now), reason: reason! },
        target: r,
      });
  }
  return out;
}

/**
 * ah's snapshot retention, with W-G8 of docs/ah-differences.md fixed: the count pass first (per service, the oldest beyond
 * `maxPerService`), then the age pass over what is left. A snapshot whose image ref a service or container
 * still runs is never selected, and is not replaced by a newer one: the newest N are always kept.
 */
export function planSnapshots(rows: SnapshotRow[], runningRefs: Set<string>, rule: RetentionRule): Plan<SnapshotRow> {
  return planRetention(rows, rule, { what: 'snapshots', inUse: (r) => !!r.imageRef && runningRefs.has(r.imageRef) });
}

/**
 * keeper's crash records (what `keeper crashes` shows): the newest per service, none past the age limit. Nothing
 * keeps one over a limit; a removal is named `<service>#<record id>`, so the age pass's reason need not say whose.
 */
export function planCrashRecords(rows: RetainedRow[], rule: RetentionRule): Plan<RetainedRow> {
  return planRetention(rows, rule, { what: 'crash records', nameOf: (r) => `${r.serviceId}#${r.id}` });
}

// ---- ah's build images ----

/** An image listed under ah's build repository: tagged, or untagged with only its registry digest left. */
export interface BuildImageObs {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  createdAt: number;
}

/** What attributes a build image to a service: the service rows, and ah's builds rows by image tag. */
export interface BuildAttribution {
  services: { id: string; tenantId: string }[];
  /** builds.image → its service and unix created_at. */
  builds: Map<string, { serviceId: string; createdAt: number }>;
}

/** What a build-image removal takes: a tag (an untag; the image goes with its last tag), or an untagged image by id. */
export interface BuildImageTarget {
  ref: string;
  imageId: string;
  serviceId: string;
  kind: 'tag' | 'dangling';
  createdAt: number;
  builtAt: number;
}

export interface BuildImageRule {
  guard: AgeGuard;
  /** Newest tagged build images kept per service; 0 turns the count rule off. */
  perService: number;
  /** Image ids that a container of any state uses. */
  usedImageIds: Set<string>;
  /** Refs that a service row names as its image (it may be redeployed or restarted from it). */
  referencedRefs: Set<string>;
}

/** `127.0.0.1:5000/ah/<tenant>-<service>` of a tag or digest ref, or undefined when the ref is not ah's build's. */
export function buildRepoOf(ref: string): string | undefined {
  if (!ref.startsWith(BUILD_IMAGE_REPO_PREFIX)) return undefined;
  const at = ref.indexOf('@');
  const name = at >= 0 ? ref.slice(0, at) : ref.slice(0, ref.lastIndexOf(':') > ref.lastIndexOf('/') ? ref.lastIndexOf(':') : undefined);
  return name.length > BUILD_IMAGE_REPO_PREFIX.length ? name : undefined;
}

/** The service a build image ref belongs to: its builds row, else the one service whose repository it names. */
export function attributeBuildRef(ref: string, by: BuildAttribution): string | undefined {
  const built = by.builds.get(ref);
  if (built) return built.serviceId;
  const repo = buildRepoOf(ref);
  if (!repo) return undefined;
  const owners = by.services.filter((s) => buildImageRepo(s.tenantId, s.id) === repo);
  return owners.length === 1 ? owners[0].id : undefined;
}

/** Every tag (or, untagged, the image itself) of ah's build repository, with the service it belongs to if any. */
export function buildImageTargets(images: BuildImageObs[], by: BuildAttribution): { target: BuildImageTarget; attributed: boolean }[] {
  const out: { target: BuildImageTarget; attributed: boolean }[] = [];
  for (const img of images) {
    const tags = img.repoTags.filter((t) => buildRepoOf(t) !== undefined);
    const dangling = img.repoTags.every((t) => t === '<none>:<none>');
    const refs = dangling ? img.repoDigests.filter((d) => buildRepoOf(d) !== undefined).slice(0, 1) : tags;
    for (const ref of refs) {
      const serviceId = attributeBuildRef(ref, by);
      const target: BuildImageTarget = {
        ref: dangling ? img.id : ref,
        imageId: img.id,
        serviceId: serviceId ?? '',
        kind: dangling ? 'dangling' : 'tag',
        createdAt: img.createdAt,
        builtAt: by.builds.get(ref)?.createdAt ?? 0,
      };
      out.push({ target, attributed: serviceId !== undefined });
    }
  }
  return out;
}

/** Newest first: the image's creation, then its build row's, then the ref, so the order is defined. */
function newestFirst(a: BuildImageTarget, b: BuildImageTarget): number {
  if (a.createdAt !== b.createdAt) return b.createdAt - a.createdAt;
  if (a.builtAt !== b.builtAt) return b.builtAt - a.builtAt;
  return a.ref < b.ref ? 1 : a.ref > b.ref ? -1 : 0;
}

/** The tags beyond the newest `perService` of each service, with their reason. */
function tagsOverLimit(targets: BuildImageTarget[], perService: number): Map<BuildImageTarget, string> {
  const over = new Map<BuildImageTarget, string>();
  if (perService <= 0) return over;
  const byService = new Map<string, BuildImageTarget[]>();
  for (const t of targets) byService.set(t.serviceId, [...(byService.get(t.serviceId) ?? []), t]);
  for (const [serviceId, list] of byService) {
    for (const t of [...list].sort(newestFirst).slice(perService)) {
      over.set(t, `build image over the limit of ${perService} per service for service ${serviceId}`);
    }
  }
  return over;
}

/**
 * ah's build images (W-G6 of docs/ah-differences.md): an untagged one (its registry digest still names ah's build
 * repository) goes once past the age guard; tagged ones are kept to the newest `perService` per service. Never one
 * that a container uses or a service row names, never one keeper cannot attribute to a service.
 */
export function planBuildImages(images: BuildImageObs[], by: BuildAttribution, rule: BuildImageRule): Plan<BuildImageTarget> {
  const all = buildImageTargets(images, by);
  const over = tagsOverLimit(
    all.filter((a) => a.attributed && a.target.kind === 'tag').map((a) => a.target),
    rule.perService,
  );
  const judge = ({ target: t, attributed }: { target: BuildImageTarget; attributed: boolean }): Verdict => {
    if (!attributed) return { remove: false, keep: 'unattributed' };
    if (rule.usedImageIds.has(t.imageId)) return { remove: false, keep: 'image-in-use' };
    if (rule.referencedRefs.has(t.ref)) return { remove: false, keep: 'referenced' };
    const reason = t.kind === 'dangling' ? `untagged build image of service ${t.serviceId}: used by no container` : over.get(t);
    if (!reason) return { remove: false, keep: 'within-limits' };
    const young = ageVerdict(t.createdAt, rule.guard);
    return young ? { remove: false, keep: young } : { remove: true, reason };
  };
  const planned = planEach(all, judge, ({ target: t }, reason) => ({
    name: t.kind === 'tag' ? t.ref : t.imageId.replace(/^sha256:/, '').slice(0, 12),
    id: t.imageId,
    ageSeconds: ageSeconds(t.createdAt, rule.guard.now),
    reason,
  }));
  return { kept: planned.kept, remove: planned.remove.map((r) => ({ item: r.item, target: r.target.target })) };
}

// ---- the order of a sweep ----

/**
 * The containers that the classes run first took away (in a dry run, would take away): the ids their items name.
 * Only the containers class runs first, so these are container ids.
 */
export function goneContainers(first: GcClassResult[]): string[] {
  return first.flatMap((r) => (r.dryRun ? r.planned : r.removed).flatMap((i) => (i.id ? [i.id] : [])));
}

/**
 * A sweep's order: the classes that run first side by side (the containers: removing them frees volumes, networks
 * and images), then the others side by side, told which containers the first took away, so that a dry run plans
 * what the real run will find. Results come in the list's order. Deterministic given `run`: the gcSweep workflow
 * runs it with its activities, the GC look and bench:gc with the host's classes.
 */
export async function sweepInStages(
  classes: readonly GcClassListed[],
  dryRun: boolean,
  run: (cls: string, input: GcClassInput) => Promise<GcClassResult>,
): Promise<GcClassResult[]> {
  const results: GcClassResult[] = new Array(classes.length);
  const stage = (first: boolean, input: GcClassInput) =>
    Promise.all(classes.flatMap((c, i) => (c.runsFirst === first ? [run(c.name, input).then((r) => (results[i] = r))] : [])));
  const first = await stage(true, { dryRun });
  await stage(false, { dryRun, goneContainers: goneContainers(first) });
  return results;
}
