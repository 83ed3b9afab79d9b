/** ah's build images: the pure rules that recognise, attribute and keep them (src/policy/gc.ts). */
import { describe, expect, it } from 'vitest';
import {
  attributeBuildRef,
  buildRepoOf,
  planBuildImages,
  type BuildAttribution,
  type BuildImageObs,
  type BuildImageRule,
} from '../../src/policy/gc';

const NOW = 1_800_000_000;
const REPO = '127.0.0.1:5000/ah/t1-svc1';
const by: BuildAttribution = {
  services: [
    { id: 'svc1', tenantId: 't1' },
    { id: 'svc2', tenantId: 't1' },
  ],
  builds: new Map([[`${REPO}:b1`, { serviceId: 'svc1', createdAt: NOW - 5000 }]]),
};
const rule = (over: Partial<BuildImageRule> = {}): BuildImageRule => ({
  guard: { now: NOW, minAgeSeconds: 600 },
  perService: 2,
  usedImageIds: new Set(),
  referencedRefs: new Set(),
  ...over,
});
const tagged = (id: string, tag: string, age: number): BuildImageObs => ({ id, repoTags: [tag], repoDigests: [], createdAt: NOW - age });
const dangling = (id: string, digestRepo: string, age: number): BuildImageObs => ({
  id,
  repoTags: ['<none>:<none>'],
  repoDigests: [`${digestRepo}@sha256:${'a'.repeat(64)}`],
  createdAt: NOW - age,
});
const removed = (images: BuildImageObs[], r = rule()) => planBuildImages(images, by, r).remove.map((x) => x.target.ref);

describe('build image names', () => {
  it("reads ah's build repository from a tag or a digest, and nothing else", () => {
    expect(buildRepoOf(`${REPO}:b1`)).toBe(REPO);
    expect(buildRepoOf(`${REPO}@sha256:abc`)).toBe(REPO);
    expect(buildRepoOf(REPO)).toBe(REPO);
    expect(buildRepoOf('127.0.0.1:5000/snapshots/t1:s1')).toBeUndefined();
    expect(buildRepoOf('127.0.0.1:5000/ah/')).toBeUndefined();
    expect(buildRepoOf('keeper-test/busybox:latest')).toBeUndefined();
  });

  it('attributes by the builds row first, then by the one service whose tenant-service the repository names', () => {
    expect(attributeBuildRef(`${REPO}:b1`, by)).toBe('svc1');
    expect(attributeBuildRef(`${REPO}:b9`, by)).toBe('svc1');
    expect(attributeBuildRef('127.0.0.1:5000/ah/t1-svc2:b1', by)).toBe('svc2');
    expect(attributeBuildRef('127.0.0.1:5000/ah/t1-gone:b1', by)).toBeUndefined();
    // two rows whose tenant-service read the same: ambiguous, so nobody's
    const twins: BuildAttribution = {
      services: [
        { id: 'b-c', tenantId: 'a' },
        { id: 'c', tenantId: 'a-b' },
      ],
      builds: new Map(),
    };
    expect(attributeBuildRef('127.0.0.1:5000/ah/a-b-c:x', twins)).toBeUndefined();
  });
});

describe('build image retention', () => {
  it('keeps the newest N tags per service and removes the older ones, each service counted apart', () => {
    const images = [
      tagged('i1', `${REPO}:b1`, 4000),
      tagged('i2', `${REPO}:b2`, 3000),
      tagged('i3', `${REPO}:b3`, 2000),
      tagged('i4', `${REPO}:b4`, 1000),
      tagged('j1', '127.0.0.1:5000/ah/t1-svc2:b1', 9000),
    ];
    const plan = planBuildImages(images, by, rule());
    expect(plan.remove.map((x) => x.target.ref)).toEqual([`${REPO}:b1`, `${REPO}:b2`]);
    expect(plan.remove[0].item).toMatchObject({
      name: `${REPO}:b1`,
      ageSeconds: 4000,
      reason: expect.stringContaining('over the limit of 2 per service for service svc1'),
    });
    expect(plan.kept).toEqual({ 'within-limits': 3 });
  });

  it('never removes a tag a container uses or a service row names, and such a tag does not make room for an older one', () => {
    const images = [
      tagged('i1', `${REPO}:b1`, 4000),
      tagged('i2', `${REPO}:b2`, 3000),
      tagged('i3', `${REPO}:b3`, 2000),
      tagged('i4', `${REPO}:b4`, 1000),
    ];
    const plan = planBuildImages(
      images,
      by,
      rule({ perService: 1, usedImageIds: new Set(['i1']), referencedRefs: new Set([`${REPO}:b2`]) }),
    );
    expect(plan.remove.map((x) => x.target.ref)).toEqual([`${REPO}:b3`]);
    expect(plan.kept).toEqual({ 'image-in-use': 1, referenced: 1, 'within-limits': 1 });
  });

  it('orders ties on the image time by the build row, then by the tag', () => {
    const images = [tagged('i1', `${REPO}:b1`, 1000), tagged('i2', `${REPO}:zz`, 1000), tagged('i3', `${REPO}:aa`, 1000)];
    // b1's build row puts it first; zz and aa have none, so the tag decides
    expect(removed(images, rule({ perService: 2 }))).toEqual([`${REPO}:aa`]);
  });

  it('keeps what it cannot attribute, and over-limit tags younger than the age guard', () => {
    const images = [tagged('x1', '127.0.0.1:5000/ah/t9-nobody:b1', 9000), tagged('i1', `${REPO}:b1`, 300), tagged('i2', `${REPO}:b2`, 200)];
    const plan = planBuildImages(images, by, rule({ perService: 1 }));
    expect(plan.remove).toEqual([]);
    expect(plan.kept).toEqual({ unattributed: 1, young: 1, 'within-limits': 1 });
  });

  it('0 turns the count rule off', () => {
    const images = [tagged('i1', `${REPO}:b1`, 4000), tagged('i2', `${REPO}:b2`, 3000)];
    expect(removed(images, rule({ perService: 0 }))).toEqual([]);
  });
});

describe('untagged build images', () => {
  it('removes an untagged image whose digest names a service, by id, once past the age guard and used by nothing', () => {
    const plan = planBuildImages([dangling('sha256:d1', REPO, 900), dangling('sha256:d2', REPO, 60)], by, rule());
    expect(plan.remove.map((x) => x.target)).toEqual([expect.objectContaining({ ref: 'sha256:d1', kind: 'dangling', serviceId: 'svc1' })]);
    expect(plan.remove[0].item).toMatchObject({ name: 'd1', reason: 'untagged build image of service svc1: used by no container' });
    expect(plan.kept).toEqual({ young: 1 });
  });

  it('keeps one a container uses, one with no known service, and one of unknown age', () => {
    const images = [
      dangling('sha256:d1', REPO, 900),
      dangling('sha256:d2', '127.0.0.1:5000/ah/t9-nobody', 900),
      { ...dangling('sha256:d3', REPO, 0), createdAt: 0 },
    ];
    const plan = planBuildImages(images, by, rule({ usedImageIds: new Set(['sha256:d1']) }));
    expect(plan.remove).toEqual([]);
    expect(plan.kept).toEqual({ 'image-in-use': 1, unattributed: 1, 'age-unknown': 1 });
  });

  it('an untagged image does not count toward the tags kept per service', () => {
    const images = [dangling('sha256:d1', REPO, 100_000), tagged('i1', `${REPO}:b1`, 50_000)];
    expect(removed(images, rule({ perService: 1 }))).toEqual(['sha256:d1']);
  });
});
