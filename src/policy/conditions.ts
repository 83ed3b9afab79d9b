/**
 * Expected conditions a loop runs into again and again until an operator acts (a template image that is not on
 * the engine, a disk above a threshold): part of the loop's result, not failures, and logged once when they
 * appear or change and once when they clear, never every run. Pure: the last reported ones are kept per host in
 * keeper_reported_conditions (src/db/conditions.ts), so a worker restart does not log them again.
 */
import type { PoolRefillResult } from '../contracts/pool';

export interface Condition {
  /** What it is about, unique within its loop: `template:tmpl_node`, `disk`. */
  subject: string;
  /** What is compared between runs: when it changes the condition is logged again (a usage percent is not in it). */
  state: string;
  /** The line logged when it appears or changes: what is wrong and what to do about it. */
  message: string;
  /** The line logged when it is no longer there. */
  cleared: string;
  /** A few words for `keeper status`: `template node image missing`. */
  summary: string;
}

/** What is kept of a condition once reported (its summary is for the result's own words only). */
export type ReportableCondition = Omit<Condition, 'summary'>;

export interface ConditionChanges<R extends ReportableCondition = ReportableCondition> {
  /** New, or with another state than the one last reported. */
  raised: ReportableCondition[];
  /** Reported before, absent now. */
  cleared: R[];
}

/** Subjects a run could not look at (nothing planned, the engine did not answer): what was reported of them stands. */
export type Unchecked = (subject: string) => boolean;

/** What to log, given the conditions last reported and the ones a run found. */
export function conditionChanges<R extends ReportableCondition>(
  reported: R[],
  found: ReportableCondition[],
  unchecked: Unchecked = () => false,
): ConditionChanges<R> {
  const before = new Map(reported.map((c) => [c.subject, c]));
  const now = new Set(found.map((c) => c.subject));
  return {
    raised: found.filter((c) => before.get(c.subject)?.state !== c.state),
    cleared: reported.filter((c) => !now.has(c.subject) && !unchecked(c.subject)),
  };
}

type RefillFacts = Pick<PoolRefillResult, 'disk' | 'plan'>;

/**
 * A refill's expected conditions: each pooled template whose image the engine lacks (its pull's own lines say how
 * the pull goes; the condition's state does not follow it, so it is logged once),
 * each --pooled-templates entry that names no template, and the disk guard's warning or block.
 */
export function refillConditions(r: RefillFacts): Condition[] {
  const out: Condition[] = [];
  for (const t of r.plan?.missingImages ?? []) {
    out.push({
      subject: `template:${t.templateId}`,
      state: `image missing: ${t.image}`,
      message: `template ${t.name}: image ${t.image} is not on this engine; keeper pulls it in the background (keeper pool status shows how), or drop ${t.name} from --pooled-templates`,
      cleared: `template ${t.name}: no longer held back by a missing image (${t.image} is on this engine, or ${t.name} is not pooled)`,
      summary: `template ${t.name} image missing${t.pull ? (t.pull.state === 'failed' ? ', pull failed' : `, ${t.pull.state}`) : ''}`,
    });
  }
  for (const name of r.plan?.unknownTemplates ?? []) {
    out.push({
      subject: `pooled:${name}`,
      state: 'no such template',
      message: `--pooled-templates names ${name}, which is no template on this host; drop it, or add the template`,
      cleared: `--pooled-templates: ${name} no longer names a missing template`,
      summary: `pooled template ${name} unknown`,
    });
  }
  const disk = diskCondition(r.disk);
  if (disk) out.push(disk);
  return out;
}

/**
 * What a refill did not look at: no template when the disk guard blocked it before the plan, nor one whose image
 * the engine did not answer about. The disk is looked at on every refill.
 */
export function refillUnchecked(r: RefillFacts): Unchecked {
  const unanswered = new Set((r.plan?.imagesUnchecked ?? []).map((id) => `template:${id}`));
  return (subject) => subject !== 'disk' && (r.plan === null || unanswered.has(subject));
}

function diskCondition(d: RefillFacts['disk']): Condition | undefined {
  if (d.level === 'ok') return undefined;
  const where = d.flaggedPaths?.join(', ') ?? d.message;
  const cleared = 'disk guard: usage is below the thresholds again, pool refills create again';
  if (d.level === 'block') {
    const message = `pool refill blocked by the disk guard: ${d.message}; free space there, or raise --disk-block`;
    return { subject: 'disk', state: `block: ${where}`, message, cleared, summary: `blocked by the disk guard (${where})` };
  }
  const message = `disk guard warns: ${d.message} (pool refills and deploys stop at --disk-block)`;
  const warnCleared = 'disk guard: no path is above the warning threshold or unmeasured any more';
  return { subject: 'disk', state: `warn: ${where}`, message, cleared: warnCleared, summary: `disk warning (${where})` };
}
