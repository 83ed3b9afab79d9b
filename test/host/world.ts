/**
 * A host for the millisecond tests of host/'s rules: a real SQLite state DB (freshDb) and settings, with an
 * in-memory engine (a test double, test/helpers/memory-engine.ts) and a clock the test moves, shared by both.
 * The same rules on a real engine are tested in test/reconcile/, test/gc/ and test/pool/ (the integration tier).
 */
import { afterEach } from 'vitest';
import type { StateDb } from '../../src/db/open';
import type { HostDeps } from '../../src/host/deps';
import { EventHints } from '../../src/watch/event-hints';
import type { RawSettings, Settings } from '../../src/settings';
import { freshDb, testDeps, testSettings, TEST_IMAGE, uniqueId } from '../helpers/fixtures';
import { MemoryEngine } from '../helpers/memory-engine';
import { addService, addTenant } from '../reconcile/rows';

export interface MemoryHost {
  db: StateDb;
  engine: MemoryEngine;
  settings: Settings;
  deps: HostDeps;
  /** Unix seconds on the shared clock. */
  nowSec(): number;
  /** Moves the shared clock forward. */
  advance(seconds: number): void;
}

const opened: StateDb[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});

/** A fresh host; its DB is closed after the test. The clock starts at the real time (ah's rows hold real times). */
export function memoryHost(raw: RawSettings = {}): MemoryHost {
  const { db } = freshDb();
  opened.push(db);
  let nowMs = Date.now();
  const clock = { nowMs: () => nowMs };
  const engine = new MemoryEngine(clock);
  const settings = testSettings(raw);
  return {
    db,
    engine,
    settings,
    deps: { ...testDeps({ db, docker: engine, settings, clock }), hints: new EventHints() },
    nowSec: () => Math.floor(nowMs / 1000),
    advance: (seconds) => void (nowMs += seconds * 1000),
  };
}

/** A tenant and a running service container as ah lays them out, with its service row. */
export async function runningService(
  h: MemoryHost,
  opts: {
    restartPolicy?: 'no' | 'unless-stopped';
    healthcheck?: boolean;
    fields?: Parameters<typeof addService>[2];
    labels?: Record<string, string>;
    tenant?: string;
  } = {},
) {
  h.engine.addImage(TEST_IMAGE);
  const tenant = opts.tenant ?? addTenant(h.db);
  const sid = uniqueId('svc');
  const cid = await h.engine.createContainer({
    name: `ah-${tenant}-${sid}`,
    image: TEST_IMAGE,
    labels: { 'ah.tenant': tenant, 'ah.service': sid, 'ah.managed': 'true', ...opts.labels },
    restartPolicy: opts.restartPolicy ?? 'unless-stopped',
    network: 'none',
    healthcheck: opts.healthcheck ? { cmd: ['true'], intervalMs: 1000 } : undefined,
  });
  await h.engine.startContainer(cid);
  addService(h.db, tenant, { containerId: cid, ...opts.fields }, sid);
  return { tenant, sid, cid };
}
