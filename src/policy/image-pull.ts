/**
 * Background pulls of pooled templates' images, pure: whether to start a pull, when to try a failed one again,
 * how a pull's progress and failure read. A refill never waits on a pull: it leaves the template out this round,
 * and the pull requests a refill when it ends.
 */
import type { PullView } from '../contracts/pool';
import { exponentialBackoff } from './backoff';
import { firstLine } from '../text';

/** What the state DB holds of an image's pull (keeper_image_pulls): the view, and whose pull it is. */
export interface PullRecord extends PullView {
  image: string;
  ownerPid: number;
  updatedAt: number;
}

export function pullView(r: PullRecord): PullView {
  return {
    state: r.state,
    attempts: r.attempts,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
    nextTryAt: r.nextTryAt,
    error: r.error,
    progress: r.progress,
  };
}

/** A pull that has run this long is given up on (its request is aborted), whoever started it. */
export const PULL_TIMEOUT_SECONDS = 3600;

/** The first retry of a failed pull waits this long; each further failure doubles it, up to the cap. */
export const PULL_RETRY_FIRST_SECONDS = 60;
export const PULL_RETRY_MAX_SECONDS = 3600;

/** How long to wait before trying again after `attempts` failed attempts in a row (1 or more). */
export function pullRetryDelaySeconds(attempts: number): number {
  return exponentialBackoff(attempts, PULL_RETRY_FIRST_SECONDS, PULL_RETRY_MAX_SECONDS);
}

export type PullAction = 'start' | 'wait';

/**
 * Whether an absent image's pull starts now. Never while another one runs (one pull per image): a row pulling
 * under a live process, for less than the timeout. A failed one waits for its next try. A pulled one whose image is
 * absent again (removed since) is pulled again.
 */
export function pullAction(record: PullRecord | undefined, nowSec: number, ownerAlive: boolean): PullAction {
  if (!record) return 'start';
  if (record.state === 'pulling') {
    const stale = !ownerAlive || nowSec - record.startedAt > PULL_TIMEOUT_SECONDS;
    return stale ? 'start' : 'wait';
  }
  if (record.state === 'failed') return nowSec >= (record.nextTryAt ?? 0) ? 'start' : 'wait';
  return 'start';
}

/**
 * Whether a registry's refusal is about credentials. The engine answers such a pull with a 500 (or 404 for Docker
 * Hub) like any other failure, so only its words tell: the hint this drives changes nothing else.
 */
export function pullNeedsCredentials(message: string): boolean {
  return /no basic auth credentials|unauthorized|authentication required|pull access denied|requested access to the resource is denied|may require 'docker login'/i.test(
    message,
  );
}

/** A failed pull's reason in one line, with a hint when the registry wanted credentials, which keeper does not hold. */
export function pullFailureLine(image: string, message: string): string {
  const first = firstLine(message).trim();
  if (!pullNeedsCredentials(first)) return first;
  return `${first} (the registry of ${image} wants credentials; keeper holds none: pull it on this engine with docker login and docker pull)`;
}

/** One line of the engine's pull progress, as docker-modem parses it. */
export interface PullProgressEvent {
  id?: string;
  status?: string;
  progressDetail?: { current?: number; total?: number };
  error?: string;
}

/** What a pull's progress events add up to: per layer, its last status and bytes. */
export interface PullProgress {
  layers: Record<string, { status: string; current: number; total: number }>;
}

const DONE_STATUSES = ['Pull complete', 'Already exists', 'Download complete'];

/** Folds one progress event into the running state; events without a layer id (the banner, the digest) change nothing. */
export function addPullProgress(p: PullProgress, e: PullProgressEvent): PullProgress {
  if (!e.id || !e.status || e.status.startsWith('Pulling from')) return p;
  const before = p.layers[e.id] ?? { status: '', current: 0, total: 0 };
  const current = e.progressDetail?.current ?? (DONE_STATUSES.includes(e.status) ? before.total : before.current);
  const total = e.progressDetail?.total ?? before.total;
  return { layers: { ...p.layers, [e.id]: { status: e.status, current, total } } };
}

/** `2/5 layers done, 12.0/40.3 MB`: how far a pull is, for the log and keeper pool status. */
export function pullProgressWords(p: PullProgress): string {
  const layers = Object.values(p.layers);
  if (layers.length === 0) return 'starting';
  const done = layers.filter((l) => l.status === 'Pull complete' || l.status === 'Already exists').length;
  const mb = (n: number) => (n / 1e6).toFixed(1);
  const current = layers.reduce((a, l) => a + l.current, 0);
  const total = layers.reduce((a, l) => a + l.total, 0);
  return `${done}/${layers.length} layers done${total > 0 ? `, ${mb(current)}/${mb(total)} MB` : ''}`;
}
