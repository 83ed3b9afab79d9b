/** GC eligibility rules, unit by unit: the pure functions both dry and real runs plan with. */
import { describe, expect, it } from 'vitest';
import {
  containerKind,
  isContainerReferenced,
  judgeBuildDir,
  judgeContainer,
  judgeDanglingImage,
  judgeNetwork,
  judgeVolume,
  needsStop,
  planCrashRecords,
  planSnapshots,
  type References,
  type RetainedRow,
  type SnapshotRow,
} from '../../src/policy/gc';

const NOW = 1_800_000_000;
const guard = { now: NOW, minAgeSeconds: 600 };
const old = NOW - 3600;
const refs = (c: string[] = [], v: string[] = []): References => ({
  containerIds: new Set(c),
  volumeNames: new Set(v),
  serviceImages: new Set(),
});
const ctr = (labels: Record<string, string>, createdAt = old, id = 'a'.repeat(64), name = 'ah-x') => ({
  id,
  name,
  labels,
  state: 'exited',
  createdAt,
});

describe('containers', () => {
  it('knows ah kinds: ah.service, and ah.type database/environment/kanban/warm-pool; nothing else', () => {
    expect(containerKind({ 'ah.service': '' })).toBe('service');
    expect(containerKind({ 'ah.type': 'warm-pool' })).toBe('warm-pool');
    expect(containerKind({ 'ah.type': 'registry' })).toBeUndefined();
    expect(containerKind({ 'ah.managed': 'true' })).toBeUndefined();
    expect(containerKind({})).toBeUndefined();
  });

  it('removes an old unreferenced ah container and says why', () => {
    expect(judgeContainer(ctr({ 'ah.type': 'kanban' }), refs(), guard)).toEqual({
      remove: true,
      reason: expect.stringContaining('orphan kanban'),
    });
    expect(judgeContainer(ctr({ 'ah.type': 'warm-pool' }), refs(), guard)).toEqual({
      remove: true,
      reason: expect.stringContaining('warm-pool leftover'),
    });
  });

  it('keeps foreign, referenced (full id, 12+ prefix or name), young and age-unknown containers', () => {
    const id = 'abcdef012345'.padEnd(64, '9');
    expect(judgeContainer(ctr({ app: 'x' }), refs(), guard)).toEqual({ remove: false, keep: 'foreign' });
    expect(judgeContainer(ctr({ 'ah.service': 's' }, old, id), refs([id]), guard)).toEqual({ remove: false, keep: 'referenced' });
    expect(judgeContainer(ctr({ 'ah.service': 's' }, old, id), refs([id.slice(0, 12)]), guard)).toEqual({
      remove: false,
      keep: 'referenced',
    });
    expect(judgeContainer(ctr({ 'ah.service': 's' }, old, id, 'ah-t-s'), refs(['ah-t-s']), guard)).toEqual({
      remove: false,
      keep: 'referenced',
    });
    // an 11-character prefix is too short to prove anything
    expect(judgeContainer(ctr({ 'ah.service': 's' }, old, id), refs([id.slice(0, 11)]), guard).remove).toBe(true);
    expect(judgeContainer(ctr({ 'ah.service': 's' }, NOW - 599), refs(), guard)).toEqual({ remove: false, keep: 'young' });
    expect(judgeContainer(ctr({ 'ah.service': 's' }, 0), refs(), guard)).toEqual({ remove: false, keep: 'age-unknown' });
  });

  it('gc-min-age 0s turns the age guard off', () => {
    expect(judgeContainer(ctr({ 'ah.service': 's' }, NOW), refs(), { now: NOW, minAgeSeconds: 0 }).remove).toBe(true);
  });

  it('stops only what is not stopped already (one call per removal for stopped containers)', () => {
    expect(['created', 'exited', 'dead'].map(needsStop)).toEqual([false, false, false]);
    expect(['running', 'restarting', 'paused'].map(needsStop)).toEqual([true, true, true]);
  });

  it('reference matching ignores short refs', () => {
    expect(isContainerReferenced(refs(['abc']), 'abcdef', 'n')).toBe(false);
  });
});

describe('volumes', () => {
  it('collects the four ah prefixes only', () => {
    for (const name of ['ah-db-1', 'ah-env-1', 'ah-kanban-1', 'ah-pool-wp_1'])
      expect(judgeVolume({ name, createdAt: old }, refs(), new Set(), guard).remove, name).toBe(true);
    for (const name of ['ah-registry', 'ah-dbx', 'db-1', 'x-ah-db-1'])
      expect(judgeVolume({ name, createdAt: old }, refs(), new Set(), guard), name).toEqual({ remove: false, keep: 'foreign' });
  });

  it('keeps referenced (a claimed pool volume by environments), mounted and young volumes', () => {
    expect(judgeVolume({ name: 'ah-pool-wp_1', createdAt: old }, refs([], ['ah-pool-wp_1']), new Set(), guard)).toEqual({
      remove: false,
      keep: 'referenced',
    });
    expect(judgeVolume({ name: 'ah-env-1', createdAt: old }, refs(), new Set(['ah-env-1']), guard)).toEqual({
      remove: false,
      keep: 'in-use',
    });
    expect(judgeVolume({ name: 'ah-env-1', createdAt: NOW - 10 }, refs(), new Set(), guard)).toEqual({ remove: false, keep: 'young' });
  });
});

describe('networks', () => {
  const net = (over: Partial<Parameters<typeof judgeNetwork>[0]> = {}) => ({
    id: 'n',
    name: 'ah-tenant-t',
    createdAt: old,
    attached: [],
    configuredOn: [],
    ...over,
  });
  it('removes an empty ah-tenant network, Traefik alone counting as empty', () => {
    expect(judgeNetwork(net(), guard).remove).toBe(true);
    expect(judgeNetwork(net({ attached: ['paas-traefik'] }), guard).remove).toBe(true);
  });
  it('keeps attached, configured, young, ah-pool and foreign networks', () => {
    expect(judgeNetwork(net({ attached: ['ah-t-s'] }), guard)).toEqual({ remove: false, keep: 'not-empty' });
    expect(judgeNetwork(net({ configuredOn: ['ah-t-s'] }), guard)).toEqual({ remove: false, keep: 'in-use' });
    expect(judgeNetwork(net({ createdAt: NOW }), guard)).toEqual({ remove: false, keep: 'young' });
    expect(judgeNetwork(net({ name: 'ah-pool' }), guard)).toEqual({ remove: false, keep: 'foreign' });
    expect(judgeNetwork(net({ name: 'bridge' }), guard)).toEqual({ remove: false, keep: 'foreign' });
  });
});

describe('dangling images', () => {
  it('removes only ah-labelled, unused, old ones', () => {
    expect(judgeDanglingImage({ id: 'i', labels: { 'ah.build': 'b' }, createdAt: old }, new Set(), guard).remove).toBe(true);
    expect(judgeDanglingImage({ id: 'i', labels: {}, createdAt: old }, new Set(), guard)).toEqual({ remove: false, keep: 'foreign' });
    expect(judgeDanglingImage({ id: 'i', labels: { 'ah.build': 'b' }, createdAt: old }, new Set(['i']), guard)).toEqual({
      remove: false,
      keep: 'in-use',
    });
  });
});

describe('build directories', () => {
  const rule = { nowMs: NOW * 1000, maxAgeMs: 3_600_000, realBase: '/b', sep: '/' };
  const e = (over: Partial<Parameters<typeof judgeBuildDir>[0]> = {}) => ({
    name: 'b1',
    path: '/b/b1',
    kind: 'directory' as const,
    mtimeMs: rule.nowMs - 7_200_000,
    resolved: '/b/b1',
    ...over,
  });
  it('removes an old directory inside the base', () => expect(judgeBuildDir(e(), rule).remove).toBe(true));
  it('keeps symlinks, files, hidden, young, and anything resolving outside the base (or to a sibling with the same prefix)', () => {
    expect(judgeBuildDir(e({ kind: 'symlink' }), rule)).toEqual({ remove: false, keep: 'symlink' });
    expect(judgeBuildDir(e({ kind: 'other' }), rule)).toEqual({ remove: false, keep: 'not-a-directory' });
    expect(judgeBuildDir(e({ name: '.tmp' }), rule)).toEqual({ remove: false, keep: 'hidden' });
    expect(judgeBuildDir(e({ mtimeMs: rule.nowMs - 60_000 }), rule)).toEqual({ remove: false, keep: 'young' });
    expect(judgeBuildDir(e({ resolved: '/etc' }), rule)).toEqual({ remove: false, keep: 'outside-base' });
    expect(judgeBuildDir(e({ resolved: '/bx/b1' }), rule)).toEqual({ remove: false, keep: 'outside-base' });
    expect(judgeBuildDir(e({ resolved: '/b' }), rule)).toEqual({ remove: false, keep: 'outside-base' });
    expect(judgeBuildDir(e({ resolved: undefined }), rule)).toEqual({ remove: false, keep: 'outside-base' });
  });
});

describe("snapshot retention (ah's rules and tests, with W-G8 fixed)", () => {
  const day = 86_400;
  const snap = (id: string, ageS: number, serviceId = 'svc-1'): SnapshotRow => ({
    id,
    tenantId: 't',
    serviceId,
    imageRef: `r/${id}`,
    createdAt: NOW - ageS,
  });
  const removed = (rows: SnapshotRow[], max: number, maxAge: number, running = new Set<string>()) =>
    planSnapshots(rows, running, { now: NOW, maxPerService: max, maxAgeSeconds: maxAge }).remove.map((r) => r.item.name);

  it('count limit: the oldest beyond the limit', () => {
    const rows = [500, 400, 300, 200, 100].map((a, i) => snap(`snap-${i + 1}`, a));
    expect(removed(rows, 3, 0)).toEqual(['snap-1', 'snap-2']);
  });
  it('age limit: strictly older than the limit', () => {
    expect(removed([snap('a', 40 * day), snap('b', 35 * day), snap('c', 5 * day), snap('edge', 30 * day)], 0, 30 * day)).toEqual([
      'a',
      'b',
    ]);
  });
  it('within both limits: nothing', () => expect(removed([snap('a', 3), snap('b', 2), snap('c', 1)], 10, 30 * day)).toEqual([]));
  it('per service', () => {
    const rows = [...[4, 3, 2, 1].map((a) => snap(`s1-${a}`, a, 'svc-1')), snap('s2-a', 2, 'svc-2'), snap('s2-b', 1, 'svc-2')];
    expect(removed(rows, 2, 0)).toEqual(['s1-4', 's1-3']);
  });
  it('both limits: the count pass first, then the age pass; the total is 2, not 4', () => {
    const rows = [snap('d60', 60 * day), snap('d45', 45 * day), snap('d3', 3 * day), snap('d2', 2 * day), snap('d1', day)];
    const plan = planSnapshots(rows, new Set(), { now: NOW, maxPerService: 3, maxAgeSeconds: 30 * day });
    expect(plan.remove.map((r) => r.item.name)).toEqual(['d60', 'd45']);
    expect(plan.remove.every((r) => r.item.reason.includes('over the limit of 3'))).toBe(true);
    expect(plan.kept).toEqual({ 'within-limits': 3 });
  });
  it('never removes a snapshot whose image ref is still run, and does not remove a newer one in its place', () => {
    const rows = [snap('old', 60 * day), snap('mid', 2 * day), snap('new', day)];
    const plan = planSnapshots(rows, new Set(['r/old']), { now: NOW, maxPerService: 2, maxAgeSeconds: 30 * day });
    expect(plan.remove).toEqual([]);
    expect(plan.kept).toEqual({ 'image-in-use': 1, 'within-limits': 2 });
  });
  it('ties on created_at are broken by id, so the choice is defined', () => {
    const rows = [snap('b', 10), snap('a', 10), snap('c', 10)];
    expect(removed(rows, 1, 0)).toEqual(['a', 'b']);
  });
});

describe('crash record retention (keeper crashes)', () => {
  const day = 86_400;
  // Record ids are AUTOINCREMENT integers: a higher id was recorded later.
  const rec = (id: number, ageS: number, serviceId = 'svc-1'): RetainedRow => ({ id: String(id), serviceId, createdAt: NOW - ageS });
  const plan = (rows: RetainedRow[], max: number, maxAge: number) =>
    planCrashRecords(rows, { now: NOW, maxPerService: max, maxAgeSeconds: maxAge });
  const removed = (rows: RetainedRow[], max: number, maxAge: number) => plan(rows, max, maxAge).remove.map((r) => r.target.id);

  it('count pass, per service: each keeps its newest N, whatever the other has', () => {
    const rows = [...[1, 2, 3, 4, 5].map((id) => rec(id, 100 - id, 'svc-1')), rec(6, 50, 'svc-2'), rec(7, 40, 'svc-2')];
    const p = plan(rows, 3, 0);
    expect(p.remove.map((r) => r.target.id)).toEqual(['1', '2']);
    expect(p.remove.map((r) => r.item)).toEqual([
      { name: 'svc-1#1', ageSeconds: 99, reason: 'over the limit of 3 crash records for service svc-1' },
      { name: 'svc-1#2', ageSeconds: 98, reason: 'over the limit of 3 crash records for service svc-1' },
    ]);
    expect(p.kept).toEqual({ 'within-limits': 5 });
  });
  it('age pass: strictly older than the limit, in every service, also under the count', () => {
    const rows = [rec(1, 31 * day), rec(2, 30 * day), rec(3, day), rec(4, 40 * day, 'svc-2')];
    const p = plan(rows, 50, 30 * day);
    expect(p.remove.map((r) => [r.item.name, r.item.reason])).toEqual([
      ['svc-2#4', `older than ${30 * day}s`],
      ['svc-1#1', `older than ${30 * day}s`],
    ]);
  });
  it('both passes: the count first, then the age over what is left; each record once', () => {
    const rows = [rec(1, 60 * day), rec(2, 45 * day), rec(3, 40 * day), rec(4, 2 * day), rec(5, day)];
    const p = plan(rows, 3, 30 * day);
    expect(p.remove.map((r) => [r.target.id, r.item.reason.startsWith('over the limit') ? 'count' : 'age'])).toEqual([
      ['1', 'count'],
      ['2', 'count'],
      ['3', 'age'],
    ]);
    expect(p.kept).toEqual({ 'within-limits': 2 });
  });
  it('0 turns each pass off; both 0 keeps everything', () => {
    const rows = [rec(1, 400 * day), rec(2, 300 * day), rec(3, day)];
    expect(removed(rows, 0, 30 * day)).toEqual(['1', '2']);
    expect(removed(rows, 1, 0)).toEqual(['1', '2']);
    expect(plan(rows, 0, 0)).toEqual({ remove: [], kept: { 'within-limits': 3 } });
  });
  it('ties on recorded_at (one tick records several deaths): the lower id goes first, compared as a number', () => {
    const rows = [rec(10, 5), rec(9, 5), rec(11, 5), rec(100, 5)];
    expect(removed(rows, 2, 0)).toEqual(['9', '10']);
  });
});
