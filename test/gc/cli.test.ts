/**
 * `keeper gc` as an operator runs it: the command starts gcSweep on the dev server, where this host's worker
 * (real engine, real SQLite file) sweeps. The dry run's list must be exactly what the real run then removes.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { openStateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import type { GcSweepResult } from '../../src/contracts/gc';
import { GC_CLASSES } from '../../src/host/gc/registry';
import { keeperInProcess as keeper } from '../helpers/cli';
import { EngineFixture, tempDir, testSettings, uniqueId } from '../helpers/fixtures';
import { devServerForFile, keeperWorker } from '../helpers/temporal';
import { crashRecord, crashRecordIds } from './world';

const fx = new EngineFixture();
const env = devServerForFile(fx);

describe('keeper gc', () => {
  it('--dry-run lists exactly what --once then removes, per class, as JSON and as a table', async () => {
    const dir = tempDir();
    const dbFile = `${dir}/state.db`;
    const u = uniqueId('');
    const flags = ['--db', dbFile, '--gc-min-age', '0s', '--build-dir', `${dir}/builds`, '--temporal-address', inject('devServerAddress')];
    const settings = testSettings({ db: dbFile, gcMinAge: '0s', buildDir: `${dir}/builds` });
    flags.push('--host-id', settings.hostId);
    const db = openStateDb(dbFile);
    await fx.volume(`ah-kanban-${u}`);
    await fx.run({ name: `ah-kanban-${u}`, labels: { 'ah.type': 'kanban' }, network: 'none' }, false);
    fs.mkdirSync(`${dir}/builds/old-${u}`, { recursive: true });
    const past = new Date(Date.now() - 2 * 3_600_000);
    fs.utimesSync(`${dir}/builds/old-${u}`, past, past);
    const record = crashRecord(db, `svc-${u}`, Math.floor(Date.now() / 1000) - 31 * 86_400); // past the 30d default
    // A problem reported of a service that ah has since deleted.
    db.prepare(`INSERT INTO keeper_reported_problems (subject, problem, first_seen) VALUES (?, 'unknown status "weird"', 1700000000)`).run(
      `service:gone-${u}`,
    );

    const worker = await keeperWorker(env, { db, docker: new DockerClient(), settings });
    await worker.runUntil(async () => {
      const dry = await keeper(['gc', '--once', '--dry-run', '--json', ...flags]);
      expect(dry.code, dry.err).toBe(0);
      const plan = JSON.parse(dry.out) as GcSweepResult;
      expect(plan.dryRun).toBe(true);
      const planned = plan.classes.flatMap((c) => c.planned.map((i) => `${c.class}:${i.name}`)).sort();
      expect(plan.classes.map((c) => c.class)).toEqual(GC_CLASSES.map((c) => c.name));
      expect(planned).toEqual(
        expect.arrayContaining([
          `containers:ah-kanban-${u}`,
          `volumes:ah-kanban-${u}`,
          `buildDirs:old-${u}`,
          `crashRecords:svc-${u}#${record}`,
          `orphanRecords:problem service:gone-${u}: unknown status "weird"`,
        ]),
      );
      expect(fs.existsSync(`${dir}/builds/old-${u}`)).toBe(true);

      const human = await keeper(['gc', '--once', '--dry-run', ...flags]);
      expect(human.out).toMatch(/^gc dry run: \d+ to remove, nothing removed/);
      expect(human.out).toMatch(new RegExp(`volumes +remove +ah-kanban-${u} +\\S+ +orphan volume`));
      expect(human.out).toMatch(new RegExp(`crashRecords +remove +svc-${u}#${record} +31d +older than 2592000s`));
      expect(human.out).toMatch(
        new RegExp(`orphanRecords +remove +problem service:gone-${u}: unknown status "weird" +\\S+ +service gone-${u} is gone`),
      );
      expect(crashRecordIds(db)).toContain(record);

      const real = await keeper(['gc', '--once', '--json', ...flags]);
      expect(real.code, real.err).toBe(0);
      const done = JSON.parse(real.out) as GcSweepResult;
      expect(done.classes.flatMap((c) => c.removed.map((i) => `${c.class}:${i.name}`)).sort()).toEqual(planned);
      expect(fs.existsSync(`${dir}/builds/old-${u}`)).toBe(false);
      expect(crashRecordIds(db)).not.toContain(record);
    });
    db.close();
  });

  it('needs --once or --dry-run, and stops on a bad setting with one line that names it (exit 2)', async () => {
    const none = await keeper(['gc']);
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/^keeper: gc needs --once/);
    const bad = await keeper(['gc', '--once', '--gc-min-age', 'soon']);
    expect(bad.code).toBe(2);
    expect(bad.err.trim().split('\n')).toEqual([
      `keeper: option '--gc-min-age <value>' argument 'soon' is invalid. "soon" is not a duration (use e.g. 500ms, 30s, 10m, 4h, 30d)`,
    ]);
    const age = await keeper(['gc', '--once', '--snapshot-max-age', '0s']);
    expect(age.code).toBe(2);
    expect(age.err).toMatch(/^keeper: option '--snapshot-max-age <value>' argument '0s' is invalid\. must be a positive duration/);
  });
});
