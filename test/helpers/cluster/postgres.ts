/**
 * A PostgreSQL cluster of the suite's own: initdb and pg_ctl run as the `postgres` user (PostgreSQL refuses to
 * run as root) on a data directory, socket directory and log inside the cluster's temp dir, listening on
 * 127.0.0.1 only, on a free port. It never looks at, starts or stops a cluster the machine already runs.
 * No vitest imports.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../../../src/temporal/dev-server';
import type { SqlEndpoint } from './facts';
import { logTail, run, waitForExit } from './run';

export interface Postgres {
  sql: SqlEndpoint;
  logFile: string;
  /** `pg_ctl stop -m fast`, then waits (bounded) until the postmaster has exited. Safe to call twice. */
  stop(): Promise<void>;
}

interface PgPaths {
  dir: string;
  dataDir: string;
  logFile: string;
}

const USER = 'temporal';
const PASSWORD = 'temporal';
const START_TIMEOUT_S = 60;

function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** `dir` becomes the postgres user's (0700); the data directory is made inside it. */
export async function initPostgres(dir: string, initdb: string): Promise<PgPaths> {
  const owner = postgresUser();
  fs.mkdirSync(dir, { mode: 0o700 });
  fs.chownSync(dir, owner.uid, owner.gid);
  const pwFile = path.join(dir, 'pwfile');
  fs.writeFileSync(pwFile, `${PASSWORD}\n`, { mode: 0o600 });
  fs.chownSync(pwFile, owner.uid, owner.gid);
  const dataDir = path.join(dir, 'data');
  // Password auth over TCP, as a production server connects; --no-sync: a throwaway cluster needs no fsync here.
  await run(
    'initdb',
    initdb,
    [
      '-D',
      dataDir,
      '-U',
      USER,
      `--pwfile=${pwFile}`,
      '--auth-host=scram-sha-256',
      '--auth-local=trust',
      '--no-locale',
      '-E',
      'UTF8',
      '--no-sync',
    ],
    { timeoutMs: 120_000, cwd: dir, user: owner },
  );
  fs.rmSync(pwFile);
  return { dir, dataDir, logFile: path.join(dir, 'postgres.log') };
}

/** Starts the cluster on a free loopback port with its socket in its own directory, waiting until it accepts. */
export async function startPostgres(paths: PgPaths, pgCtl: string): Promise<Postgres> {
  const owner = postgresUser();
  const port = await freePort();
  // Settings in postgresql.conf rather than pg_ctl -o, which pg_ctl passes through a shell.
  fs.appendFileSync(
    path.join(paths.dataDir, 'postgresql.conf'),
    [
      `listen_addresses = '127.0.0.1'`,
      `port = ${port}`,
      `unix_socket_directories = '${paths.dir}'`,
      // Each of the server's four services opens its own pools (up to 22 connections each).
      'max_connections = 200',
    ].join('\n') + '\n',
  );
  const pgCtlRun = (what: string, args: string[], timeoutS: number) =>
    run(what, pgCtl, [...args, '-D', paths.dataDir, '-w', '-t', String(timeoutS)], {
      timeoutMs: (timeoutS + 10) * 1000,
      cwd: paths.dir,
      user: owner,
    });
  try {
    await pgCtlRun('pg_ctl start', ['start', '-l', paths.logFile], START_TIMEOUT_S);
  } catch (err) {
    // pg_ctl may have given up waiting on a postmaster that still came up: stop it before reporting.
    await pgCtlRun('pg_ctl stop', ['stop', '-m', 'immediate'], 30).catch(() => undefined);
    throw new Error(`${(err as Error).message}; ${logTail(paths.logFile)}`);
  }
  const pid = Number(fs.readFileSync(path.join(paths.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  let stopped = false;
  return {
    sql: { host: '127.0.0.1', port, user: USER, password: PASSWORD },
    logFile: paths.logFile,
    async stop() {
      if (stopped) return;
      stopped = true;
      await pgCtlRun('pg_ctl stop', ['stop', '-m', 'fast'], 30);
      await waitForExit('postgres', pid, 10_000);
    },
  };
}
