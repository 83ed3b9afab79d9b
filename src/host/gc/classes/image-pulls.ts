/**
 * keeper's records of its background image pulls (keeper_image_pulls, what `keeper pool status` shows): the row
 * of an image that no pooled template uses any more, and a finished one (pulled, or failed) older than 30 days. A
 * pull under way is never touched, and a row changed since the sweep looked is kept (a pull began or ended). DB
 * only, so the look requests no sweep for it: the schedule's sweeps trim the table.
 */
import { deleteImagePull, imagePull, imagePulls } from '../../../db/image-pulls';
import { listTemplates } from '../../../db/pool';
import { planEach, type Plan, type Verdict } from '../../../policy/gc';
import { PULL_TIMEOUT_SECONDS, type PullRecord } from '../../../policy/image-pull';
import { resolvePooledTemplates } from '../../../policy/pool';
import { unixSeconds } from '../../../time';
import { processAlive } from '../../pool/pull';
import { gcClass } from '../class';

/** A finished pull's record is kept this long: long enough to read in `keeper pool status` after the fact. */
export const PULL_RECORD_MAX_AGE_SECONDS = 30 * 86_400;

export interface PullRecordObs extends PullRecord {
  /** Whether the process that owns a `pulling` row still runs on this machine. */
  ownerAlive: boolean;
}

export interface PullRecordRule {
  now: number; // unix seconds
  /** The images of the pooled templates (--pooled-templates). */
  pooledImages: Set<string>;
  /** Rows of images no template uses are kept this long after their last change (--gc-min-age). */
  minAgeSeconds: number;
}

/** Pure: which pull records go. */
export function planImagePulls(rows: PullRecordObs[], rule: PullRecordRule): Plan<PullRecordObs> {
  const judge = (r: PullRecordObs): Verdict => {
    const age = rule.now - r.updatedAt;
    if (r.state === 'pulling' && r.ownerAlive && rule.now - r.startedAt <= PULL_TIMEOUT_SECONDS) return { remove: false, keep: 'in-use' };
    if (!rule.pooledImages.has(r.image)) {
      if (age < rule.minAgeSeconds) return { remove: false, keep: 'young' };
      return { remove: true, reason: `no pooled template uses ${r.image}` };
    }
    if (r.state !== 'pulling' && age > PULL_RECORD_MAX_AGE_SECONDS) return { remove: true, reason: `${r.state} over 30 days ago` };
    return { remove: false, keep: 'within-limits' };
  };
  return planEach(rows, judge, (r, reason) => ({ name: r.image, ageSeconds: Math.max(0, rule.now - r.updatedAt), reason }));
}

export const imagePullRecords = gcClass({
  name: 'imagePulls',
  words: 'expired image-pull records',
  lookRequests: false,
  observe: ({ db, settings }) => ({
    rows: imagePulls(db).map((r) => ({ ...r, ownerAlive: r.state === 'pulling' && processAlive(r.ownerPid) })),
    pooledImages: new Set(resolvePooledTemplates(settings.pooledTemplates, listTemplates(db)).pooled.map((t) => t.baseImage)),
  }),
  plan: (seen, { settings, clock }) =>
    planImagePulls(seen.rows, {
      now: unixSeconds(clock),
      pooledImages: seen.pooledImages,
      minAgeSeconds: Math.floor(settings.gcMinAgeMs / 1000),
    }),
  remove: (r, { db }) => {
    if (!deleteImagePull(db, r) && imagePull(db, r.image))
      throw new Error(`the pull record of ${r.image} changed since the sweep looked: kept`);
  },
});
