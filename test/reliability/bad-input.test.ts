/**
 * Bad input in the rows the loops read: a seeded generator (bad-rows.ts) writes a few hundred rows of
 * nonsense; three ticks, a sweep (dry run: this is the suite's shared engine) and two refills run over them
 * on the dev server with the real engine. None may fail, and every bad row is reported exactly once.
 */
import { describe, expect, it } from 'vitest';
import { openStateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { taskQueueFor } from '../../src/ids';
import { gcSweep, poolRefill, reconcileTick } from '../../src/workflows';
import { freshDb, tempDir, testSettings, uniqueId } from '../helpers/fixtures';
import { devServerForFile, keeperWorker } from '../helpers/temporal';
import { expectedProblems, insertBadRows } from './bad-rows';

const env = devServerForFile();

const SEEDS = [1, 2, 3];

describe('bad input: seeded nonsense rows in every column the loops read', () => {
  for (const seed of SEEDS) {
    it(`seed ${seed}: ticks, a sweep and refills all complete, and every bad row is reported exactly once`, async () => {
      const { db: first, file } = freshDb();
      first.close();
      const world = insertBadRows(file, seed, { services: 150, databases: 30, environments: 30, pool: 30, snapshots: 20 });
      const expected = expectedProblems(file);
      const db = openStateDb(file, { create: false });
      const settings = testSettings({ db: file, recovery: 'stop', pooledTemplates: '', buildDir: tempDir() });
      const q = taskQueueFor(settings.hostId);
      const logged: string[] = [];
      const write = process.stderr.write.bind(process.stderr);
      process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
        const line = String(chunk);
        if (line.includes('"bad input skipped"')) logged.push(JSON.parse(line.trim()).subject);
        return line.includes('"level":"warn"') || line.includes('"level":"info"')
          ? true
          : (write as (...a: unknown[]) => boolean)(chunk, ...rest);
      }) as typeof process.stderr.write;
      const worker = await keeperWorker(env, { db, docker: new DockerClient(), settings });
      try {
        const results = await worker.runUntil(async () => {
          const ticks = [];
          for (let i = 0; i < 3; i++)
            ticks.push(await env.client.workflow.execute(reconcileTick, { taskQueue: q, workflowId: uniqueId(`tick-bad${seed}-`) }));
          const sweep = await env.client.workflow.execute(gcSweep, {
            taskQueue: q,
            workflowId: uniqueId(`gc-bad${seed}-`),
            args: [{ dryRun: true }],
          });
          const refills = [];
          for (let i = 0; i < 2; i++)
            refills.push(await env.client.workflow.execute(poolRefill, { taskQueue: q, workflowId: uniqueId(`pool-bad${seed}-`) }));
          // Circuits the nonsense opened or left due run on this worker: stop them before it goes.
          for await (const wf of env.client.workflow.list({ query: `KeeperHost="${settings.hostId}" AND ExecutionStatus="Running"` })) {
            await env.client.workflow.getHandle(wf.workflowId).terminate('test over');
          }
          return { ticks, sweep, refills };
        });
        const reported = db
          .prepare(`SELECT subject FROM keeper_reported_problems WHERE subject NOT LIKE 'container:%'`)
          .pluck()
          .all() as string[];
        const twice = db
          .prepare(
            `SELECT subject, group_concat(problem, ' | ') AS problems FROM keeper_reported_problems GROUP BY subject HAVING COUNT(*) > 1`,
          )
          .all();
        if (twice.length) console.log('reported twice:', JSON.stringify(twice));
        const perSubject = new Map<string, number>();
        for (const s of logged) perSubject.set(s, (perSubject.get(s) ?? 0) + 1);
        console.log(
          `bad input seed ${seed}: ${world.inserted} rows (${world.refused} refused by SQLite), ${expected.size} bad by the oracle, ${reported.length} reported, ${logged.length} log lines; sweep classErrors ${results.sweep.totals.classErrors}, planned ${results.sweep.totals.planned}; refill pruned ${results.refills[0].prune.pruned.length}`,
        );
        expect(world.inserted).toBeGreaterThanOrEqual(200);
        expect(new Set(reported)).toEqual(expected);
        expect(reported.length).toBe(expected.size); // one row per subject
        expect([...perSubject.values()].every((n) => n === 1)).toBe(true); // logged once over three ticks
        expect(new Set(logged)).toEqual(expected);
        for (const t of results.ticks) expect(t.dockerReachable).toBe(true);
        expect(results.sweep.totals.classErrors).toBe(0);
        for (const r of results.refills) expect(r.error).toBeUndefined();
      } finally {
        process.stderr.write = write;
        db.close();
      }
    }, 120_000);
  }
});
