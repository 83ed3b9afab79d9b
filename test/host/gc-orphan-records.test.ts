/**
 * The orphanRecords GC class on a real SQLite state DB and the in-memory engine: the circuit hold and opening of a
 * service that is gone go, and the opening numbers a reused id then gets start above them; a reported problem goes
 * once its subject is gone (its row deleted, or its container gone from the engine), and never while it is still
 * there, so a present problem is still reported once.
 */
import { describe, expect, it } from 'vitest';
import { heldOpening } from '../../src/db/circuit-holds';
import { recordOpening } from '../../src/db/circuit-openings';
import { reportedProblems, reportProblemOnce } from '../../src/db/hosted';
import { holdCircuit } from '../../src/host/circuit';
import { orphanRecords } from '../../src/host/gc/classes/orphan-records';
import { sweepOnHost } from '../../src/host/gc/registry';
import { TEST_IMAGE } from '../helpers/fixtures';
import { addService, addTenant } from '../reconcile/rows';
import { memoryHost, type MemoryHost } from './world';

/** A service whose circuit keeper opened `openings` times and whose workflow holds the last one. */
async function heldService(h: MemoryHost, id: string, openings: number): Promise<void> {
  addService(h.db, addTenant(h.db), { status: 'crashed', circuitOpen: 1, circuitOpenCount: 1, circuitRetryAt: h.nowSec() + 600 }, id);
  for (let i = 0; i < openings; i++) recordOpening(h.db, { serviceId: id, escalation: 1, retryAt: h.nowSec() + 600 }, h.nowSec());
  await holdCircuit(h.deps, id);
}

const deleteService = (h: MemoryHost, id: string) => h.db.prepare('DELETE FROM services WHERE id = ?').run(id);
const problems = (h: MemoryHost) => reportedProblems(h.db).map((p) => `${p.subject} ${p.problem}`);

async function container(h: MemoryHost): Promise<string> {
  h.engine.addImage(TEST_IMAGE);
  return h.engine.createContainer({ name: `c-${Math.random()}`, image: TEST_IMAGE, labels: {}, network: 'none' });
}

describe('orphan records (orphanRecords)', () => {
  it("removes the hold and opening of a service that is gone; a reused id's openings go on above its numbers", async () => {
    const h = memoryHost();
    await heldService(h, 'svc-gone', 3);
    await heldService(h, 'svc-here', 1);
    deleteService(h, 'svc-gone');
    const dry = await orphanRecords.run(h.deps, { dryRun: true });
    expect(dry.planned.map((p) => p.name).sort()).toEqual([
      'circuit hold of svc-gone (opening 3)',
      'circuit opening of svc-gone (opening 3)',
    ]);
    expect(heldOpening(h.db, 'svc-gone')).toBe(3); // a dry run removes nothing
    const swept = await orphanRecords.run(h.deps, { dryRun: false });
    expect(swept.removed.map((p) => p.reason)).toEqual(['service svc-gone is gone', 'service svc-gone is gone']);
    expect(heldOpening(h.db, 'svc-gone')).toBeUndefined();
    expect(h.db.prepare('SELECT COUNT(*) FROM keeper_circuit_openings WHERE service_id = ?').pluck().get('svc-gone')).toBe(0);
    expect(heldOpening(h.db, 'svc-here')).toBe(1);
    // ah creates a service with the same id: its first opening is not a number the old one's alerts were keyed by.
    addService(h.db, addTenant(h.db), {}, 'svc-gone');
    expect(recordOpening(h.db, { serviceId: 'svc-gone', escalation: 1, retryAt: h.nowSec() + 600 }, h.nowSec())).toBe(4);
    // A sweep again finds nothing.
    expect((await orphanRecords.run(h.deps, { dryRun: false })).removed).toEqual([]);
  });

  it('removes a problem once its subject is gone, never one whose subject is there (it is still reported once)', async () => {
    const h = memoryHost();
    const here = await container(h);
    const gone = await container(h);
    const tenant = addTenant(h.db);
    addService(h.db, tenant, {}, 'svc-present');
    const now = h.nowSec() - 60;
    const report = (subject: string, problem = 'a problem') => reportProblemOnce(h.db, subject, problem, now);
    report('service:svc-present');
    report('service:svc-deleted', 'unknown status "weird"');
    report(`container:${here.slice(0, 12)}`, 'split-brain');
    report(`container:${gone.slice(0, 12)}`, 'split-brain');
    report('database:db-deleted');
    report('environment:env-deleted');
    report('label:whatever'); // a subject this class does not know: kept
    await h.engine.removeContainer(gone, { force: true });
    // A problem reported after the engine was listed may be of a container newer than the list: kept.
    const young = await container(h);
    await h.engine.removeContainer(young, { force: true });
    reportProblemOnce(h.db, `container:${young.slice(0, 12)}`, 'split-brain', h.nowSec() + 5);
    const swept = await orphanRecords.run(h.deps, { dryRun: false });
    expect(swept.removed.map((r) => r.reason).sort()).toEqual([
      `container ${gone.slice(0, 12)} is gone from the engine`,
      'database db-deleted is gone',
      'environment env-deleted is gone',
      'service svc-deleted is gone',
    ]);
    expect(swept.kept).toEqual({ present: 2, foreign: 1, young: 1 });
    expect(problems(h).sort()).toEqual(
      [
        'service:svc-present a problem',
        `container:${here.slice(0, 12)} split-brain`,
        `container:${young.slice(0, 12)} split-brain`,
        'label:whatever a problem',
      ].sort(),
    );
    // Still there: the tick that finds it again does not log it again.
    expect(report('service:svc-present')).toBe(false);
    expect(report(`container:${here.slice(0, 12)}`, 'split-brain')).toBe(false);
  });

  it('skips the container problems while the engine does not answer, and removes the rest', async () => {
    const h = memoryHost();
    reportProblemOnce(h.db, 'container:0123456789ab', 'split-brain', h.nowSec() - 60);
    reportProblemOnce(h.db, 'service:svc-deleted', 'unknown status "weird"', h.nowSec() - 60);
    h.engine.fail('container.list', { status: 500 });
    const swept = await orphanRecords.run(h.deps, { dryRun: false });
    expect(swept.removed.map((r) => r.name)).toEqual(['problem service:svc-deleted: unknown status "weird"']);
    expect(swept.skipped).toEqual([{ name: 'problem container:0123456789ab', error: expect.any(String) }]);
    expect(problems(h)).toEqual(['container:0123456789ab split-brain']);
  });

  it("sees a container this sweep's containers class removes as gone, in a dry run too", async () => {
    const h = memoryHost({ gcMinAge: '0s' });
    h.engine.addImage(TEST_IMAGE);
    const orphan = await h.engine.createContainer({
      name: 'ah-orphan',
      image: TEST_IMAGE,
      labels: { 'ah.service': 'nobody' },
      network: 'none',
    });
    reportProblemOnce(h.db, `container:${orphan.slice(0, 12)}`, 'split-brain', h.nowSec() - 60);
    h.advance(60);
    const dry = await sweepOnHost(h.deps, true);
    expect(dry.find((r) => r.class === 'containers')?.planned.map((p) => p.id)).toEqual([orphan]);
    expect(dry.find((r) => r.class === 'orphanRecords')?.planned.map((p) => p.name)).toEqual([
      `problem container:${orphan.slice(0, 12)}: split-brain`,
    ]);
  });
});
