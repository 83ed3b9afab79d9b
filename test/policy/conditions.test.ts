import { describe, expect, it } from 'vitest';
import { conditionChanges, refillConditions, refillUnchecked, type Condition } from '../../src/policy/conditions';

const ok = { level: 'ok' as const, message: 'disk ok', flaggedPaths: [] };
const plan = (p: { missing?: { templateId: string; name: string; image: string }[]; unknown?: string[] } = {}) => ({
  steps: [],
  ready: {},
  pooled: [],
  unknownTemplates: p.unknown ?? [],
  missingImages: p.missing ?? [],
});
const NODE = { templateId: 'tmpl_node', name: 'node', image: 'node:22-bookworm' };

describe('refillConditions', () => {
  it('says which template lacks which image, and what to do: pull it or stop pooling it', () => {
    expect(refillConditions({ disk: ok, plan: plan({ missing: [NODE] }) })).toEqual([
      {
        subject: 'template:tmpl_node',
        state: 'image missing: node:22-bookworm',
        message:
          'template node: image node:22-bookworm is not on this engine; keeper pulls it in the background (keeper pool status shows how), or drop node from --pooled-templates',
        cleared: 'template node: no longer held back by a missing image (node:22-bookworm is on this engine, or node is not pooled)',
        summary: 'template node image missing',
      },
    ]);
  });

  it('reports a --pooled-templates entry that names no template', () => {
    const [c] = refillConditions({ disk: ok, plan: plan({ unknown: ['cobol'] }) });
    expect(c).toMatchObject({
      subject: 'pooled:cobol',
      message: '--pooled-templates names cobol, which is no template on this host; drop it, or add the template',
    });
  });

  it('keys the disk guard on its level and paths, not on the usage, which moves every run', () => {
    const block = (pct: string) =>
      refillConditions({ disk: { level: 'block', message: `/var/lib/docker ${pct} used`, flaggedPaths: ['/var/lib/docker'] }, plan: null });
    const [a] = block('95.1%');
    const [b] = block('95.3%');
    expect(a).toMatchObject({
      subject: 'disk',
      state: 'block: /var/lib/docker',
      message: 'pool refill blocked by the disk guard: /var/lib/docker 95.1% used; free space there, or raise --disk-block',
    });
    expect(conditionChanges([a], [b]).raised).toEqual([]);
    const [warn] = refillConditions({ disk: { level: 'warn', message: '/data 85% used', flaggedPaths: ['/data'] }, plan: null });
    expect(warn).toMatchObject({
      state: 'warn: /data',
      message: 'disk guard warns: /data 85% used (pool refills and deploys stop at --disk-block)',
    });
  });

  it('finds nothing in a refill with the disk ok and every image there, nor in one recorded before plans checked images', () => {
    expect(refillConditions({ disk: ok, plan: plan() })).toEqual([]);
    expect(
      refillConditions({ disk: { level: 'ok', message: 'disk ok' }, plan: { steps: [], ready: {}, pooled: [], unknownTemplates: [] } }),
    ).toEqual([]);
  });
});

describe('conditionChanges', () => {
  const c = (subject: string, state: string): Condition => ({
    subject,
    state,
    message: `${subject} ${state}`,
    cleared: `${subject} cleared`,
    summary: subject,
  });

  it('raises new conditions and changed states, clears the ones gone, and says nothing of the unchanged', () => {
    const changes = conditionChanges(
      [c('disk', 'warn: /'), c('template:a', 'x'), c('template:b', 'x')],
      [c('disk', 'block: /'), c('template:a', 'x'), c('template:c', 'y')],
    );
    expect(changes.raised.map((r) => r.subject)).toEqual(['disk', 'template:c']);
    expect(changes.cleared.map((r) => r.subject)).toEqual(['template:b']);
    expect(conditionChanges([c('disk', 'warn: /')], [c('disk', 'warn: /')])).toEqual({ raised: [], cleared: [] });
  });

  it('keeps what a run could not look at: templates while the disk guard blocks before the plan, an image the engine did not answer about', () => {
    const missing = refillConditions({ disk: ok, plan: plan({ missing: [NODE] }) });
    const blocked = { disk: { level: 'block' as const, message: 'full', flaggedPaths: ['/'] }, plan: null };
    expect(conditionChanges(missing, refillConditions(blocked), refillUnchecked(blocked))).toMatchObject({
      cleared: [],
      raised: [{ subject: 'disk' }],
    });
    const unanswered = { disk: ok, plan: { ...plan(), imagesUnchecked: ['tmpl_node'] } };
    expect(conditionChanges(missing, refillConditions(unanswered), refillUnchecked(unanswered))).toEqual({ raised: [], cleared: [] });
    const answered = { disk: ok, plan: plan() };
    expect(conditionChanges(missing, refillConditions(answered), refillUnchecked(answered)).cleared.map((x) => x.subject)).toEqual([
      'template:tmpl_node',
    ]);
  });
});
