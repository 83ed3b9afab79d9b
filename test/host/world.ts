/**
 * A host for the millisecond tests of host/'s rules: a real SQLite state DB (freshDb) and settings, with an
 * in-memory engine (a test double, test/helpers/memory-engine.ts) and a clock the test moves, shared by both.
 * The same rules on a real engine are tested in test/reconcile/, test/gc/ and test/pool/ (the integration tier).
 */
import { afterEach } from 'vitest';
import type { StateDb } from '../../src/db/open';
import type { HostDeps } from '../../src/host/deps';
import { EventHints } from '../../src/host/event-hints';
import type { RawSettings, Settings } from '../../src/settings';
import { freshDb, testDeps, testSettings } from '../helpers/fixtures';
import { MemoryEngine } from '../helpers/memory-engine';

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
