import { describe, expect, it } from 'vitest';
import {
  addPullProgress,
  pullAction,
  pullFailureLine,
  pullProgressWords,
  pullRetryDelaySeconds,
  PULL_TIMEOUT_SECONDS,
  type PullProgress,
  type PullRecord,
} from '../../src/policy/image-pull';
import { pullStateWords } from '../../src/cli/words';

const NOW = 1_800_000_000;
const record = (r: Partial<PullRecord>): PullRecord => ({
  image: 'node:22-bookworm',
  state: 'pulling',
  attempts: 1,
  startedAt: NOW - 10,
  finishedAt: null,
  nextTryAt: null,
  error: '',
  progress: '',
  ownerPid: 4242,
  updatedAt: NOW - 10,
  ...r,
});

describe('pullAction', () => {
  it('starts an image never pulled, and one pulled before that is absent again', () => {
    expect(pullAction(undefined, NOW, false)).toBe('start');
    expect(pullAction(record({ state: 'pulled', attempts: 0, finishedAt: NOW - 100 }), NOW, true)).toBe('start');
  });
  it('waits for a pull a live process runs (one pull per image), and starts again one whose process is gone or that ran past the timeout', () => {
    expect(pullAction(record({}), NOW, true)).toBe('wait');
    expect(pullAction(record({}), NOW, false)).toBe('start');
    expect(pullAction(record({ startedAt: NOW - PULL_TIMEOUT_SECONDS - 1 }), NOW, true)).toBe('start');
  });
  it('waits for a failed pull until its next try', () => {
    const failed = record({ state: 'failed', nextTryAt: NOW + 1 });
    expect(pullAction(failed, NOW, false)).toBe('wait');
    expect(pullAction(failed, NOW + 1, false)).toBe('start');
  });
});

describe('pullRetryDelaySeconds', () => {
  it('is 1 min after the first failure, doubling, at most 1 h', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 100].map(pullRetryDelaySeconds)).toEqual([60, 120, 240, 480, 960, 1920, 3600, 3600, 3600]);
  });
});

describe('pullFailureLine', () => {
  it("keeps the registry's own error, on one line", () => {
    expect(pullFailureLine('r:5000/x:v1', 'docker image.pull: HTTP 404: manifest for r:5000/x:v1 not found: manifest unknown\nmore')).toBe(
      'docker image.pull: HTTP 404: manifest for r:5000/x:v1 not found: manifest unknown',
    );
  });
  it("gives no hint for a denial that is not the registry's", () => {
    expect(pullFailureLine('x:1', 'docker image.pull: HTTP 500: open /var/lib/docker/tmp: permission denied: read-only file system')).toBe(
      'docker image.pull: HTTP 500: open /var/lib/docker/tmp: permission denied: read-only file system',
    );
  });
  it('says keeper holds no credentials when the registry wants some', () => {
    for (const said of [
      'no basic auth credentials',
      'unauthorized: authentication required',
      "pull access denied for acme/app, repository does not exist or may require 'docker login': denied: requested access to the resource is denied",
    ]) {
      expect(pullFailureLine('acme/app:1', `docker image.pull: HTTP 500: ${said}`)).toBe(
        `docker image.pull: HTTP 500: ${said} (the registry of acme/app:1 wants credentials; keeper holds none: pull it on this engine with docker login and docker pull)`,
      );
    }
  });
});

describe('pull progress', () => {
  it("adds up the engine's progress lines per layer, ignoring the banner and digest lines", () => {
    const events = [
      { status: 'Pulling from keeper/x', id: 'v1' },
      { status: 'Pulling fs layer', id: 'a' },
      { status: 'Pulling fs layer', id: 'b' },
      { status: 'Downloading', id: 'a', progressDetail: { current: 1_000_000, total: 4_000_000 } },
      { status: 'Already exists', id: 'b' },
      { status: 'Digest: sha256:abc' },
    ];
    const p = events.reduce<PullProgress>(addPullProgress, { layers: {} });
    expect(pullProgressWords(p)).toBe('1/2 layers done, 1.0/4.0 MB');
    const done = [
      { status: 'Download complete', id: 'a' },
      { status: 'Pull complete', id: 'a' },
    ].reduce(addPullProgress, p);
    expect(pullProgressWords(done)).toBe('2/2 layers done, 4.0/4.0 MB');
    expect(pullProgressWords({ layers: {} })).toBe('starting');
  });
});

describe('pullStateWords', () => {
  const iso = (s: number | null) => (s === null ? '-' : `t${s - NOW}`);
  it('says pulling since when (and how far), pulled when, or failed why and when it is tried again', () => {
    expect(pullStateWords(record({ progress: '1/2 layers done' }), iso)).toBe('pulling since t-10 (1/2 layers done)');
    expect(pullStateWords(record({ state: 'pulled', attempts: 0, finishedAt: NOW }), iso)).toBe('pulled t0');
    expect(pullStateWords(record({ state: 'failed', attempts: 2, error: 'manifest unknown', nextTryAt: NOW + 120 }), iso)).toBe(
      'failed (attempt 2): manifest unknown; next try at t120',
    );
  });
});
