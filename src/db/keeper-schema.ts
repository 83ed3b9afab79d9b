/**
 * keeper's own tables. They all start with `keeper_`, so that ah never sees a change to its own schema.
 * Append new migrations at the end; never edit one that has shipped.
 */
import type { Migration } from './ah-schema';

export const KEEPER_MIGRATIONS: Migration[] = [
  {
    name: 'keeper_001_loop_results',
    sql: `
CREATE TABLE keeper_loop_results (
  loop TEXT PRIMARY KEY,            -- reconcile | gc | pool | health
  host_id TEXT NOT NULL,
  workflow_id TEXT NOT NULL DEFAULT '',
  finished_at INTEGER NOT NULL,     -- unix seconds
  result_json TEXT NOT NULL
);`,
  },
];

// ---- reconciler and circuit breaker: the 1xx range ----
KEEPER_MIGRATIONS.push(
  {
    name: 'keeper_101_container_looks',
    sql: `
-- What the reconciler last saw of each service's container. A crash is counted by a compare-and-set on this
-- row, so a retried activity never counts twice, and RestartCount deltas count deaths that Docker's
-- unless-stopped policy restarted between two ticks. No foreign key: ah deletes services freely.
CREATE TABLE keeper_container_looks (
  service_id TEXT PRIMARY KEY,
  container_id TEXT NOT NULL,
  state TEXT NOT NULL,            -- running | restarting | exited | dead | created | paused | missing
  restart_count INTEGER NOT NULL,
  health TEXT NOT NULL DEFAULT '',
  looked_at INTEGER NOT NULL      -- unix seconds; the container was in this state then
);`,
  },
  {
    name: 'keeper_102_circuit_openings',
    sql: `
-- When keeper last opened each service's circuit, for escalation decay. A count inherited from ah has no row.
CREATE TABLE keeper_circuit_openings (
  service_id TEXT PRIMARY KEY,
  generation INTEGER NOT NULL,    -- circuit_open_count after that opening
  opened_at INTEGER NOT NULL
);`,
  },
  {
    name: 'keeper_103_reported_problems',
    sql: `
-- Bad rows and labels the reconciler reported, so that each is logged once, not every tick.
CREATE TABLE keeper_reported_problems (
  subject TEXT NOT NULL,
  problem TEXT NOT NULL,
  first_seen INTEGER NOT NULL,
  PRIMARY KEY (subject, problem)
);`,
  },
);

// ---- event-driven detection: the 4xx range ----
KEEPER_MIGRATIONS.push({
  name: 'keeper_401_event_watcher',
  sql: `
-- The Docker event watcher of each host: whether it follows the engine's stream, and the time of the last
-- event it handled, from which it resumes (since) after a stream drop or a worker restart.
CREATE TABLE keeper_event_watcher (
  host_id TEXT PRIMARY KEY,
  state TEXT NOT NULL,              -- following | reconnecting | unavailable | stopped
  last_error TEXT NOT NULL DEFAULT '',
  last_event_ns TEXT,               -- engine timeNano of the last handled event, decimal (beyond 2^53)
  state_since INTEGER NOT NULL,     -- unix seconds
  updated_at INTEGER NOT NULL
);`,
});

// ---- tenant runtime: the 15xx range ----
KEEPER_MIGRATIONS.push({
  name: 'keeper_1501_container_runtimes',
  sql: `
-- The runtime (HostConfig.Runtime) of each pool container, as keeper made it or read it from an inspect. A
-- container's runtime never changes, so a row stays true for the container's life. warm_pool has no runtime
-- column (and keeper adds none to ah's tables): a claim takes only a ready row whose container is recorded here
-- under the configured runtime, so an unrecorded or foreign one is never handed out. The refill records the
-- pool's other containers (made by ah, or before this table) or replaces them, and drops rows no pool row names.
CREATE TABLE keeper_container_runtimes (
  container_id TEXT PRIMARY KEY,
  runtime TEXT NOT NULL,
  recorded_at INTEGER NOT NULL      -- unix seconds
);`,
});

// ---- crash forensics and notifications: the 14xx range ----
KEEPER_MIGRATIONS.push(
  {
    name: 'keeper_1401_crash_records',
    sql: `
-- One row per counted death, written in the transaction that counts it (so a retried activity never writes
-- two). What each field holds depends on how the death was seen; NULL means the engine no longer had it.
-- The log tail is a tenant's output: it stays in this DB, which only its owner can read (0600).
CREATE TABLE keeper_crash_records (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  service_id TEXT NOT NULL,
  container_id TEXT NOT NULL,
  died_at_ms INTEGER,                  -- unix ms; NULL when no fact of the time survived
  exit_code INTEGER,                   -- NULL when unknown (Docker restarted it and its die event is gone)
  oom_killed INTEGER,                  -- 1 or 0; NULL when unknown
  signal TEXT,                         -- SIGKILL, SIGSEGV ... from an exit code above 128; NULL otherwise
  seen_by TEXT NOT NULL,               -- look | event | restart-count | health-check | missing
  engine_error TEXT NOT NULL DEFAULT '', -- the inspect's State.Error
  reason TEXT NOT NULL,                -- the death in words
  log_tail TEXT NOT NULL DEFAULT '',   -- the dead run's last lines: at most 50 and 8 kB, control characters removed
  log_note TEXT NOT NULL DEFAULT '',   -- why the tail is empty or partial
  window_start INTEGER NOT NULL,       -- crash_window_start it was counted in: the deaths that opened a circuit
  recorded_at INTEGER NOT NULL         -- unix seconds; retention by age reads it
);
CREATE INDEX keeper_crash_records_by_service ON keeper_crash_records (service_id, id);
CREATE INDEX keeper_crash_records_by_age ON keeper_crash_records (recorded_at);`,
  },
  {
    name: 'keeper_1402_notifications',
    sql: `
-- The outcome of each alert at each webhook: one row per (event, target), written once delivery ended, so
-- keeper status can say what reached whom and which receiver refused. A target is named by its origin and a
-- hash of its URL, never by the URL (webhook URLs carry tokens).
CREATE TABLE keeper_notifications (
  event_key TEXT NOT NULL,           -- the idempotency key the receiver got
  target_id TEXT NOT NULL,
  target_shown TEXT NOT NULL,
  kind TEXT NOT NULL,                -- circuit-opened | circuit-closed | recovery-failed
  service_id TEXT NOT NULL,
  outcome TEXT NOT NULL,             -- delivered | failed
  attempts INTEGER NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  finished_at INTEGER NOT NULL,      -- unix seconds
  PRIMARY KEY (event_key, target_id)
);
CREATE INDEX keeper_notifications_by_time ON keeper_notifications (finished_at);`,
  },
);

// ---- quieter logs for expected conditions: the 16xx range ----
KEEPER_MIGRATIONS.push({
  name: 'keeper_1601_reported_conditions',
  sql: `
-- The expected conditions (a template image missing, the disk guard's warning or block) each loop of each host
-- last logged, so that it logs one when it appears or changes and once when it clears, across worker restarts.
CREATE TABLE keeper_reported_conditions (
  host_id TEXT NOT NULL,
  loop TEXT NOT NULL,               -- pool
  subject TEXT NOT NULL,            -- template:<id> | pooled:<entry> | disk
  state TEXT NOT NULL,              -- compared between runs; a change is logged again
  message TEXT NOT NULL,            -- the line logged when it appeared
  cleared TEXT NOT NULL,            -- the line to log when it clears
  since INTEGER NOT NULL,           -- unix seconds: when this state was first reported
  PRIMARY KEY (host_id, loop, subject)
);`,
});

// ---- what the worker runs with, for `keeper status`: the 17xx range ----
KEEPER_MIGRATIONS.push({
  name: 'keeper_1701_worker_config',
  sql: `
-- The effective configuration of the last worker that started on this host, so that keeper status reports what
-- the worker uses rather than its own flags. Nothing secret: webhooks by origin and hash, never a URL or a key.
CREATE TABLE keeper_worker_config (
  host_id TEXT PRIMARY KEY,
  keeper_version TEXT NOT NULL,
  started_at INTEGER NOT NULL,      -- unix seconds
  pid INTEGER NOT NULL,
  config_json TEXT NOT NULL         -- see WorkerConfig in src/db/worker-config.ts
);`,
});

// ---- operations: host ids recorded against this DB (uninstall, a changed host id): the 17xx range ----
KEEPER_MIGRATIONS.push({
  name: 'keeper_1702_hosts',
  sql: `
-- Each host id a keeper worker has run under against this state DB. A worker that starts under another id than
-- the ones recorded warns of the old id's schedules and workflows (keeper uninstall --host-id OLD removes them),
-- and keeper uninstall forgets its id. first_seen also dates keeper's arrival on the DB: a crash window that opened
-- after it and holds more deaths than keeper recorded was counted by another writer (ah's own reconciler).
CREATE TABLE keeper_hosts (
  host_id TEXT PRIMARY KEY,
  first_seen INTEGER NOT NULL,      -- unix seconds: the first worker start under this id
  last_seen INTEGER NOT NULL        -- unix seconds: the latest worker start under this id
);`,
});

// ---- per-service crash policy: expected exits are recorded, not counted ----
KEEPER_MIGRATIONS.push({
  name: 'keeper_1703_expected_exits',
  sql: `
-- 1 for a death whose exit code the service's keeper.expected-exit-codes label lists: recorded for keeper
-- crashes, never counted toward the circuit, never part of the deaths that opened one.
ALTER TABLE keeper_crash_records ADD COLUMN expected INTEGER NOT NULL DEFAULT 0;`,
});

// ---- dated deaths: how each recorded death's time was found ----
KEEPER_MIGRATIONS.push({
  name: 'keeper_1704_dated_deaths',
  sql: `
-- How died_at_ms was found: live (seen within a minute), event (the engine's replayed die event), run-times (the
-- container's State.FinishedAt) or spread (nothing survived: placed evenly over the interval keeper did not see).
-- NULL for deaths recorded before keeper dated them. window_start is now the window each death was counted in.
ALTER TABLE keeper_crash_records ADD COLUMN dated_by TEXT;`,
});

// ---- template images pulled in the background: the 17xx range ----
KEEPER_MIGRATIONS.push({
  name: 'keeper_1705_image_pulls',
  sql: `
-- The background pull of each pooled template's image that the engine lacked: one row per image, so one pull per
-- image at a time, and what keeper pool status shows. A pull belongs to the process that started it (owner_pid):
-- a row left pulling by a process that no longer runs (a worker restart, a one-shot command) is started again.
CREATE TABLE keeper_image_pulls (
  image TEXT PRIMARY KEY,
  state TEXT NOT NULL,              -- pulling | pulled | failed
  attempts INTEGER NOT NULL,        -- failed attempts in a row, the current one included while pulling; 0 once pulled
  started_at INTEGER NOT NULL,      -- unix seconds: when the current or last attempt began
  finished_at INTEGER,              -- unix seconds; NULL while pulling
  next_try_at INTEGER,              -- unix seconds: a failed pull is not started again before this
  error TEXT NOT NULL DEFAULT '',   -- why the last attempt failed, in one line
  progress TEXT NOT NULL DEFAULT '', -- the latest progress in words, while pulling
  owner_pid INTEGER NOT NULL,
  updated_at INTEGER NOT NULL       -- unix seconds
);`,
});

// ---- watchful at no cost: the 28xx range ----
KEEPER_MIGRATIONS.push({
  name: 'keeper_2801_circuit_holds',
  sql: `
-- The circuit generation whose workflow has taken hold of it (its first activity, holdCircuit, writes the row). An
-- open circuit with no row for its generation has no timer yet: the worker's look asks for a tick that starts its
-- workflow, however long the worker or the server was away, and whoever opened it (keeper or ah).
CREATE TABLE keeper_circuit_holds (
  service_id TEXT PRIMARY KEY,
  generation INTEGER NOT NULL,    -- circuit_open_count of the opening held
  held_at INTEGER NOT NULL        -- unix seconds
);
-- Circuits keeper opened before this table existed had their workflows started by the tick that opened them.
INSERT INTO keeper_circuit_holds (service_id, generation, held_at)
  SELECT s.id, s.circuit_open_count, o.opened_at FROM services s
    JOIN keeper_circuit_openings o ON o.service_id = s.id AND o.generation = s.circuit_open_count
   WHERE s.circuit_open = 1;`,
});

KEEPER_MIGRATIONS.push({
  name: 'keeper_2802_look_states',
  sql: `
-- The worker's local looks, one row per host and loop, for keeper status: when each last looked, what that look
-- found, when one last asked for a run, and the error of a look that fails (with since when). The worker writes
-- the row after each look; nothing else reads it.
CREATE TABLE keeper_look_states (
  host_id TEXT NOT NULL,
  loop TEXT NOT NULL,               -- reconcile | pool | gc
  looked_at INTEGER,                -- unix seconds of the last look that worked; NULL before the first
  found INTEGER NOT NULL DEFAULT 0, -- things to do the last look that worked found
  asked_at INTEGER,                 -- unix seconds of the last look that asked for a run; NULL if none has
  error TEXT NOT NULL DEFAULT '',   -- why the last look failed, in one line; '' when it worked
  failing_since INTEGER,            -- unix seconds of the first failure in a row; NULL when the last look worked
  PRIMARY KEY (host_id, loop)
);`,
});

KEEPER_MIGRATIONS.push({
  name: 'keeper_2803_request_failures',
  sql: `
-- The worker's run requests that Temporal has not taken, one row per host and loop while the loop's request fails,
-- for keeper status: since when, how many attempts, the last error, and whether Temporal refused it for good (its
-- schedule is gone, keeper may not start the run) or only did not take it yet (the server is down). The row goes
-- once the request is taken; the worker clears its host's rows at its start.
CREATE TABLE keeper_request_failures (
  host_id TEXT NOT NULL,
  loop TEXT NOT NULL,                 -- reconcile | pool | gc
  why TEXT NOT NULL,                  -- what asked for the run (docker events, a local look, disk pressure)
  error TEXT NOT NULL,                -- the last attempt's error, in one line
  refused INTEGER NOT NULL DEFAULT 0, -- 1: refused for good (an operator must act); 0: not taken yet (transient)
  failing_since INTEGER NOT NULL,     -- unix seconds of the first failed attempt
  attempts INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (host_id, loop)
);`,
});

// ---- circuit openings that never repeat: the 29xx range ----
KEEPER_MIGRATIONS.push({
  name: 'keeper_2901_circuit_opening_numbers',
  sql: `
-- Each opening of a service's circuit gets a number of its own, 1, 2, 3 ..., that never goes back, apart from ah's
-- circuit_open_count: that is the escalation level, which picks the backoff and decays back to 0. An opening's alerts
-- (their idempotency keys), its notify workflows, its hold and its recovery are by its number, so a circuit that
-- opens again after its escalation decayed is a new opening in every respect.
-- Builds from before this migration keep working on these tables (a newer CLI may migrate the DB under an older
-- worker): they write keeper_circuit_openings (service_id, generation, opened_at) and keeper_circuit_holds
-- (service_id, generation, held_at), so both keep those columns; \`generation\` is the escalation, by its old name.
-- keeper_circuit_openings is rebuilt only so that opened_at may be NULL (an opening keeper took over).
CREATE TABLE keeper_circuit_openings_2901 (
  service_id TEXT PRIMARY KEY,
  generation INTEGER NOT NULL,      -- the escalation (circuit_open_count) of the latest opening; an older build's name
  opened_at INTEGER,                -- unix seconds keeper last opened it itself (escalation decays from it); NULL if never
  opening INTEGER NOT NULL DEFAULT 0, -- the latest opening's number; the next one is one more. 0: an older build's
                                    -- row, whose opening is numbered when the tick or its workflow takes it over
  retry_at INTEGER,                 -- circuit_retry_at of that opening: an open row with another escalation or retry
                                    -- time is a newer opening (ah closed this one and opened another)
  taken_over_at INTEGER             -- unix seconds keeper took over the latest opening (ah opened it, or it was open
                                    -- before openings were numbered); NULL when keeper opened it
);
-- Keeper's own openings keep their count as their number: keys of the new shape cannot meet the old ones anyway.
INSERT INTO keeper_circuit_openings_2901 (service_id, generation, opened_at, opening, retry_at, taken_over_at)
  SELECT o.service_id, o.generation, o.opened_at, MAX(o.generation, 1),
         (SELECT s.circuit_retry_at FROM services s
           WHERE s.id = o.service_id AND s.circuit_open = 1 AND s.circuit_open_count = o.generation),
         NULL
    FROM keeper_circuit_openings o;
-- An open circuit a workflow holds that keeper did not open (ah did): taken over when its workflow held it, as the
-- next opening after keeper's last of that service (its first: 1).
INSERT INTO keeper_circuit_openings_2901 (service_id, generation, opened_at, opening, retry_at, taken_over_at)
  SELECT s.id, s.circuit_open_count, NULL, 1, s.circuit_retry_at, h.held_at
    FROM services s JOIN keeper_circuit_holds h ON h.service_id = s.id AND h.generation = s.circuit_open_count
   WHERE s.circuit_open = 1
  ON CONFLICT (service_id) DO UPDATE SET opening = opening + 1, generation = excluded.generation,
     retry_at = excluded.retry_at, taken_over_at = excluded.taken_over_at
   WHERE retry_at IS NOT excluded.retry_at OR generation <> excluded.generation;
DROP TABLE keeper_circuit_openings;
ALTER TABLE keeper_circuit_openings_2901 RENAME TO keeper_circuit_openings;
-- A hold now names the opening it holds. NULL: a hold written by an older build, or of a generation no longer open;
-- it holds no numbered opening.
ALTER TABLE keeper_circuit_holds ADD COLUMN opening INTEGER;
UPDATE keeper_circuit_holds SET opening = (
  SELECT o.opening FROM services s JOIN keeper_circuit_openings o ON o.service_id = s.id
   WHERE s.id = keeper_circuit_holds.service_id AND s.circuit_open = 1 AND s.circuit_open_count = keeper_circuit_holds.generation
     AND o.generation = s.circuit_open_count AND o.retry_at IS s.circuit_retry_at);
-- GC prunes the rows of services that are gone; the highest opening number it pruned is kept here, and a service
-- with no row numbers its openings above it, so an id ah reuses never repeats an opening's key.
CREATE TABLE keeper_circuit_opening_floor (
  only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
  opening INTEGER NOT NULL          -- the highest opening number of a service whose rows GC pruned
);`,
});

// ---- one word for each idea: the 30xx range ----

/**
 * Triggers that copy each write of one of two tables of the same rows to the other (their times named `fromTime`
 * and `toTime`), unless it holds the row already: recursive triggers are off, and a copy fires the other table's
 * trigger, which finds the row there and copies nothing back. No conflict clause: a trigger's would give way to the
 * statement's (an older build's upsert). Part of keeper_3001's SQL, which has shipped: never change what it makes.
 */
function copyWrites(from: string, to: string, fromTime: string, toTime: string): string {
  const copy = (
    event: 'INSERT' | 'UPDATE',
  ) => `CREATE TRIGGER ${from}_${event === 'INSERT' ? 'inserted' : 'updated'} AFTER ${event} ON ${from}
WHEN NOT EXISTS (SELECT 1 FROM ${to} d WHERE d.service_id = NEW.service_id AND d.container_id = NEW.container_id
  AND d.state = NEW.state AND d.restart_count = NEW.restart_count AND d.health = NEW.health AND d.${toTime} = NEW.${fromTime})
BEGIN
  UPDATE ${to} SET container_id = NEW.container_id, state = NEW.state, restart_count = NEW.restart_count,
    health = NEW.health, ${toTime} = NEW.${fromTime} WHERE service_id = NEW.service_id;
  INSERT INTO ${to} (service_id, container_id, state, restart_count, health, ${toTime})
    SELECT NEW.service_id, NEW.container_id, NEW.state, NEW.restart_count, NEW.health, NEW.${fromTime}
     WHERE NOT EXISTS (SELECT 1 FROM ${to} WHERE service_id = NEW.service_id);
END;`;
  return `${copy('INSERT')}
${copy('UPDATE')}
CREATE TRIGGER ${from}_deleted AFTER DELETE ON ${from}
BEGIN
  DELETE FROM ${to} WHERE service_id = OLD.service_id;
END;`;
}

KEEPER_MIGRATIONS.push({
  name: 'keeper_3001_container_snapshots',
  sql: `
-- keeper_container_looks under the name of what it holds: keeper's snapshot of each service's container, the state a
-- crash is counted against by compare-and-set (a "look" is now only what a loop's local look finds). Builds from
-- before this migration keep working on the DB (a newer CLI may migrate it under an older worker): they read and
-- write keeper_container_looks, which stays, kept equal to keeper_container_snapshots by triggers both ways and in
-- the same statement, so a compare-and-set on either is one on both. A later release drops it, once no build from
-- before this one runs.
CREATE TABLE keeper_container_snapshots (
  service_id TEXT PRIMARY KEY,
  container_id TEXT NOT NULL,
  state TEXT NOT NULL,            -- running | restarting | exited | dead | created | paused | missing
  restart_count INTEGER NOT NULL,
  health TEXT NOT NULL DEFAULT '',
  seen_at INTEGER NOT NULL        -- unix seconds; the container was in this state then
);
INSERT INTO keeper_container_snapshots (service_id, container_id, state, restart_count, health, seen_at)
  SELECT service_id, container_id, state, restart_count, health, looked_at FROM keeper_container_looks;
${copyWrites('keeper_container_looks', 'keeper_container_snapshots', 'looked_at', 'seen_at')}
${copyWrites('keeper_container_snapshots', 'keeper_container_looks', 'seen_at', 'looked_at')}`,
});
