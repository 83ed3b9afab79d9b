/**
 * poolRefill with stub activities on the time-skipping server: its steps in order (detach, prune, disk check,
 * plan, one create per entry with an id the workflow chose, record), the disk guard's block, and which create
 * failures it retries: the error types it lists as non-retryable are tried once and reported in `failed`.
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it, vi } from 'vitest';
import type { Activities } from '../../src/loops/registry';
import type { DiskVerdict } from '../../src/contracts/disk';
import type { PoolEntryRequest, PoolEntryResult, RefillPlan } from '../../src/contracts/pool';
import { poolRefill } from '../../src/workflows';
import { executeWithStubs, stubWorkerEnvForFile } from './helpers';

const env = stubWorkerEnvForFile();
const ENTRY_ID = /^wp_[0-9a-f]{20}$/;

const verdict = (level: DiskVerdict['level'], message: string): DiskVerdict => ({
  level,
  warnAt: 80,
  blockAt: 90,
  paths: [],
  message,
  flaggedPaths: level === 'ok' ? [] : ['/var/lib/docker'],
});
const plan = (steps: RefillPlan['steps'], ready: Record<string, number> = {}): RefillPlan => ({
  steps,
  ready,
  pooled: steps.map((s) => s.templateId),
  unknownTemplates: [],
});

type Create = (req: PoolEntryRequest) => Promise<PoolEntryResult>;
const created: Create = async (req) => ({ ...req, outcome: 'created', containerId: `c-${req.entryId}` });

function poolStubs(opts: { disk?: DiskVerdict; plan?: RefillPlan; create?: Create } = {}) {
  const steps: string[] = [];
  const step =
    <T>(name: string, value: T) =>
    async () => (steps.push(name), value);
  const stubs = {
    detachClaimedFromPool: vi.fn<Activities['detachClaimedFromPool']>(step('detach', { detached: ['c-old'], failed: [] })),
    prunePoolGhosts: vi.fn<Activities['prunePoolGhosts']>(
      step('prune', { checked: 1, pruned: [], kept: [], finishedClaims: 0, strandedClaims: [] }),
    ),
    checkDiskSpace: vi.fn<Activities['checkDiskSpace']>(step('disk', opts.disk ?? verdict('ok', 'disk ok'))),
    planPoolRefill: vi.fn<Activities['planPoolRefill']>(step('plan', opts.plan ?? plan([]))),
    createPoolEntry: vi.fn<Activities['createPoolEntry']>(async (req) => (steps.push('create'), (opts.create ?? created)(req))),
    recordPoolRefill: vi.fn<Activities['recordPoolRefill']>(async () => void steps.push('record')),
  } satisfies Pick<
    Activities,
    'detachClaimedFromPool' | 'prunePoolGhosts' | 'checkDiskSpace' | 'planPoolRefill' | 'createPoolEntry' | 'recordPoolRefill'
  >;
  return { stubs, steps };
}

/** Entry requests per template, from the create stub's calls (retries included). */
const requestsOf = (create: ReturnType<typeof poolStubs>['stubs']['createPoolEntry']) => create.mock.calls.map(([req]) => req);

describe('poolRefill', () => {
  it('detaches, prunes, checks the disk, plans, creates each entry under an id it chose, and records', async () => {
    const { stubs, steps } = poolStubs({
      plan: plan(
        [
          { templateId: 'tmpl_default', count: 2 },
          { templateId: 'tmpl_node', count: 1 },
        ],
        { tmpl_default: 1 },
      ),
      create: async (req) => (req.templateId === 'tmpl_node' ? { ...req, outcome: 'full' } : created(req)),
    });
    const { result } = await executeWithStubs(env, stubs, poolRefill);
    expect(steps).toEqual(['detach', 'prune', 'disk', 'plan', 'create', 'create', 'create', 'record']);
    const requests = requestsOf(stubs.createPoolEntry);
    expect(requests.map((r) => r.templateId).sort()).toEqual(['tmpl_default', 'tmpl_default', 'tmpl_node']); // started side by side
    for (const r of requests) expect(r.entryId).toMatch(ENTRY_ID);
    expect(new Set(requests.map((r) => r.entryId)).size).toBe(3);
    expect(result).toMatchObject({
      detach: { detached: ['c-old'] },
      disk: { level: 'ok', message: 'disk ok' },
      blocked: false,
      failed: [],
    });
    expect(result.created.map((c) => c.outcome)).toEqual(['created', 'created', 'full']);
    expect(result.ready).toEqual({ tmpl_default: 3 }); // 1 ready before + 2 created; `full` adds nothing
    expect(result.error).toBeUndefined();
    expect(stubs.recordPoolRefill.mock.calls).toEqual([[result]]);
  });

  it('creates nothing when the disk guard blocks, and records why', async () => {
    const { stubs, steps } = poolStubs({ disk: verdict('block', '/var/lib/docker 95% used (block at 90%)') });
    const { result } = await executeWithStubs(env, stubs, poolRefill);
    expect(steps).toEqual(['detach', 'prune', 'disk', 'record']);
    expect(result).toMatchObject({
      blocked: true,
      plan: null,
      created: [],
      error: 'pool refill blocked by the disk guard: /var/lib/docker 95% used (block at 90%)',
    });
    expect(stubs.recordPoolRefill.mock.calls).toEqual([[result]]);
  });

  it('tries TemplateNotFound, ImageMissing and NameTaken once each and reports them in failed', async () => {
    const types = ['TemplateNotFound', 'ImageMissing', 'NameTaken'];
    const { stubs } = poolStubs({
      plan: plan(types.map((templateId) => ({ templateId, count: 1 }))),
      // Thrown as retryable: only the workflow's nonRetryableErrorTypes can stop the retries.
      create: async (req) => {
        throw ApplicationFailure.retryable(`${req.templateId} for ${req.entryId}`, req.templateId);
      },
    });
    const { result } = await executeWithStubs(env, stubs, poolRefill);
    expect(
      requestsOf(stubs.createPoolEntry)
        .map((r) => r.templateId)
        .sort(),
    ).toEqual([...types].sort());
    expect(result.failed).toEqual(
      types.map((t) => ({
        templateId: t,
        entryId: expect.stringMatching(ENTRY_ID),
        error: expect.stringMatching(new RegExp(`^${t} for wp_`)),
      })),
    );
    expect(result.error).toMatch(/^3 pool container\(s\) not created: TemplateNotFound for wp_/);
    expect(result.created).toEqual([]);
  });

  it('retries other failures under the same entry id: a flaky create succeeds, a broken one fails after 3 attempts', async () => {
    let flakyFailures = 1;
    const { stubs } = poolStubs({
      plan: plan([
        { templateId: 'flaky', count: 1 },
        { templateId: 'broken', count: 1 },
      ]),
      create: async (req) => {
        if (req.templateId === 'broken') throw new Error('engine returned 500');
        if (flakyFailures-- > 0) throw ApplicationFailure.retryable('connection reset', 'DockerError');
        return created(req);
      },
    });
    const { result } = await executeWithStubs(env, stubs, poolRefill);
    const requests = requestsOf(stubs.createPoolEntry);
    const byTemplate = (t: string) => requests.filter((r) => r.templateId === t);
    expect(byTemplate('flaky')).toHaveLength(2);
    expect(byTemplate('broken')).toHaveLength(3); // maximumAttempts 3
    for (const t of ['flaky', 'broken']) expect(new Set(byTemplate(t).map((r) => r.entryId)).size).toBe(1);
    expect(result.created).toEqual([{ ...byTemplate('flaky')[0], outcome: 'created', containerId: `c-${byTemplate('flaky')[0].entryId}` }]);
    expect(result.failed).toEqual([{ ...byTemplate('broken')[0], error: 'engine returned 500' }]);
    expect(result.ready).toEqual({ flaky: 1 });
  });
});
