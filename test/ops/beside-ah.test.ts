/**
 * Running where ah runs: a crash_count that rose without keeper recording it is another writer (ah's reconciler
 * left running). On an ah-made DB, keeper counts a death the real way (recordCrash), and a second connection bumps
 * crash_count as ah's reconciler does; the tick's housekeeping step logs one warning per change, `keeper status`
 * says so, and keeper counting alone, or a count ah made before keeper arrived, raises nothing.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { recordHostStart } from '../../src/db/keeper-hosts';
import { openStateDb, type StateDb } from '../../src/db/open';
import { recordCrash } from '../../src/db/services';
import { DockerClient } from '../../src/docker/client';
import { housekeep } from '../../src/host/reconcile/housekeep';
import { crashPolicy } from '../../src/policy/deaths/decision';
import { makeAhDb } from '../helpers/ah-db';
import { keeperInProcess } from '../helpers/cli';
import { tempDir, testDeps, testSettings, uniqueId } from '../helpers/fixtures';
import { captureLog } from '../helpers/log';
import { addService, nowSec } from '../reconcile/rows';

const CID = 'c'.repeat(64);

function setup(opts: { keeperArrivedAgoSec?: number } = {}) {
  const file = path.join(tempDir(), 'state.db');
  makeAhDb(file);
  const db = openStateDb(file);
  const settings = testSettings({ db: file });
  recordHostStart(db, settings.hostId, nowSec() - (opts.keeperArrivedAgoSec ?? 60));
  const captured = captureLog();
  const deps = testDeps({ db, docker: new DockerClient(), settings, log: captured.log });
  const tick = () => housekeep(deps, crashPolicy(settings));
  return { file, db, settings, captured, tick };
}

/** One death counted by keeper's own path: the look swap and the row update in one transaction. */
function keeperCounts(db: StateDb, sid: string, restartCount: number): void {
  const look = (n: number) => ({ containerId: CID, state: 'running', restartCount: n, health: '' });
  const outcome = recordCrash(
    db,
    {
      serviceId: sid,
      containerId: CID,
      expectedLook: restartCount === 1 ? null : look(restartCount - 1),
      nextLook: look(restartCount),
      deaths: 1,
      reason: 'exit code 1',
      statusAfter: 'running',
    },
    nowSec(),
    crashPolicy(testSettings()),
  );
  expect(outcome.counted).toBe(1);
}

/** What ah's reconciler does on a death: crash_count + 1, through a connection of its own. */
function ahCounts(file: string, sid: string): void {
  const ah = new Database(file);
  ah.prepare('UPDATE services SET crash_count = crash_count + 1, updated_at = ? WHERE id = ?').run(nowSec(), sid);
  ah.close();
}

const warnings = (lines: string[]) => lines.map((l) => JSON.parse(l)).filter((r) => r.level === 'warn');

describe('another writer counting crashes on the state DB', () => {
  it("is logged once per change, shown by keeper status, and cleared when the count is keeper's again", async () => {
    const { file, db, settings, captured, tick } = setup();
    const sid = addService(db, 't1', { containerId: CID });
    keeperCounts(db, sid, 1);
    tick();
    expect(warnings(captured.lines)).toEqual([]);

    ahCounts(file, sid);
    tick();
    tick();
    const warned = warnings(captured.lines);
    expect(warned).toHaveLength(1);
    expect(warned[0].msg).toContain(`${sid} 2 (keeper counted 1)`);
    expect(warned[0].msg).toContain('docs/running-beside-ah.md');

    const status = await keeperInProcess(['status', '--db', file, '--host-id', settings.hostId]);
    expect(status.code).toBe(0);
    expect(status.out).toMatch(
      /crash counts\s+WARNING: another writer counts crashes \(1 service\): stop ah's loops, see docs\/running-beside-ah.md/,
    );
    const json = JSON.parse((await keeperInProcess(['status', '--json', '--db', file, '--host-id', settings.hostId])).out);
    expect(json.otherWriter).toEqual([{ serviceId: sid, crashCount: 2, keeperCounted: 1, windowStart: expect.any(Number) }]);

    // A second service counted by ah too: the condition changed, so it is logged again, once.
    const sid2 = addService(db, 't1', { containerId: 'd'.repeat(64), crashCount: 1, crashWindowStart: nowSec() });
    tick();
    tick();
    expect(warnings(captured.lines)).toHaveLength(2);

    // ah's loops stopped and the windows gone (a reset): keeper says it is clear, once.
    db.prepare('UPDATE services SET crash_count = 0, crash_window_start = NULL WHERE id IN (?, ?)').run(sid, sid2);
    tick();
    tick();
    const cleared = captured.records().filter((r) => String(r.msg).startsWith("no crash count on this state DB is above keeper's"));
    expect(cleared).toHaveLength(1);
    expect(warnings(captured.lines)).toHaveLength(2);
    expect((await keeperInProcess(['status', '--db', file, '--host-id', settings.hostId])).out).toMatch(
      /crash counts\s+counted by keeper alone/,
    );
    db.close();
  });

  it('keeper counting alone, and counts ah made before keeper arrived, raise nothing', () => {
    const { db, captured, tick } = setup({ keeperArrivedAgoSec: 30 });
    const alone = addService(db, 't1', { containerId: CID });
    keeperCounts(db, alone, 1);
    keeperCounts(db, alone, 2);
    // ah's own window from before keeper's first worker start: inherited, not a second writer.
    addService(db, 't1', { containerId: 'e'.repeat(64), crashCount: 3, crashWindowStart: nowSec() - 120 }, uniqueId('inherited'));
    tick();
    expect(warnings(captured.lines)).toEqual([]);
    db.close();
  });
});
