/**
 * keeper refuses to start on an engine without its tenant runtime: an engine of this file's own with no gVisor
 * registered (the suite's main engine is keeper's provisioned one, which registers runsc where it can run). The
 * built bin, as an operator runs it, with keeper's real default (runsc): a worker on a configured Temporal and
 * every command that creates containers exit 2 with one line naming the runtime and the fix, and write and create
 * nothing. A development host (embedded Temporal, no runtime named) starts under runc and its banner says why.
 * `keeper status` says what runs tenant code.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DockerClient } from '../../src/docker/client';
import { TenantRuntimeMissing, workerTenantRuntime } from '../../src/host/tenant-runtime';
import { createLogger } from '../../src/log';
import { SettingsError } from '../../src/settings';
import { keeper, startKeeper } from '../helpers/cli';
import { embeddedPortsForFile } from '../helpers/embedded-ports';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { tempDir, TEST_IMAGE, testSettings } from '../helpers/fixtures';
import { cleanupPoolDb, poolDb } from '../pool/helpers';

/** The line, exactly as an operator sees it on stderr (the engine's list of runtimes varies by version). */
const REFUSAL =
  /^keeper: tenant runtime runsc is not registered with the Docker engine \(it lists [^)]*\brunc\b[^)]*\): install gVisor \(Debian: apt-get install runsc\) and register it with the engine \("runtimes": \{"runsc": \{"path": "\/usr\/bin\/runsc"\}\} in daemon\.json, then restart dockerd\), or pass --tenant-runtime runc to run tenant code on the host kernel, with weaker isolation than ah's gVisor\n$/;

embeddedPortsForFile();
let engine: ExtraEngine;
let docker: DockerClient;
/** keeper's own default (no flag and no KEEPER_TENANT_RUNTIME; the test helpers otherwise pass runc), on this file's engine. */
let DEFAULT_RUNTIME: NodeJS.ProcessEnv;
let pool: ReturnType<typeof poolDb> | undefined;

beforeAll(async () => {
  engine = extraEngine('no-gvisor');
  docker = new DockerClient(engine.dockerHost);
  DEFAULT_RUNTIME = { KEEPER_TENANT_RUNTIME: undefined, DOCKER_HOST: engine.dockerHost };
  expect((await docker.runtimes()).names, 'an engine started without a daemon config lists no runsc').not.toContain('runsc');
  pool = poolDb();
});
afterAll(async () => {
  try {
    if (pool?.db.open) await cleanupPoolDb(pool.db, docker);
  } finally {
    if (engine) stopEngine(engine);
  }
});

describe('an engine without the tenant runtime', () => {
  it('keeper worker on a configured Temporal exits 2 with one line before it writes or starts anything', async () => {
    const db = path.join(tempDir(), 'data', 'state.db');
    const args = ['worker', '--db', db, '--host-id', 'gv-refused', '--metrics-port', '0', '--temporal-address', inject('devServerAddress')];
    const r = await keeper(args, DEFAULT_RUNTIME, 60_000);
    expect(r.stderr).toMatch(REFUSAL);
    expect(r.code).toBe(2);
    expect(r.stdout).not.toContain('keeper is running');
    expect(fs.existsSync(path.dirname(db))).toBe(false);
  });

  it('a development host (embedded Temporal) with runsc named by a variable exits 2 the same way', async () => {
    const db = path.join(tempDir(), 'data', 'state.db');
    const r = await keeper(['worker', '--db', db, '--metrics-port', '0'], { ...DEFAULT_RUNTIME, KEEPER_TENANT_RUNTIME: 'runsc' }, 60_000);
    expect(r.stderr).toMatch(REFUSAL);
    expect(r.code).toBe(2);
    expect(fs.existsSync(path.dirname(db))).toBe(false);
  });

  it('a development host with no runtime named starts under runc, and its banner says so and why', async () => {
    const db = path.join(tempDir(), 'data', 'state.db');
    const worker = startKeeper(
      ['worker', '--db', db, '--host-id', 'gv-fallback', '--metrics-port', '0', '--log-format', 'json'],
      DEFAULT_RUNTIME,
    );
    try {
      await worker.waitForOutput(/keeper is running[\s\S]*pool\s+(next run|paused)/, 120_000);
      expect(worker.output).toMatch(
        /^ {2}tenants {5}runtime runc: WEAKER than ah's: tenant code runs on the host kernel \(runc\), not under gVisor$/m,
      );
      expect(worker.output).toMatch(
        /^ {14}why: this Docker engine does not list runsc \(it lists [^)]*runc[^)]*\), and this is a development host \(embedded Temporal, no --tenant-runtime given\)/m,
      );
      expect(worker.output).toContain('"msg":"tenant code runs under runc: no gVisor on this engine"');
    } finally {
      worker.child.kill('SIGTERM');
    }
    expect(await worker.exited).toBe(0);
  });

  it('pool claim, pool refill --once and service create exit 2 with the same line, and change nothing', async () => {
    const { file, tenant, db } = pool!;
    const rows = () =>
      db
        .prepare(`SELECT (SELECT COUNT(*) FROM environments) e, (SELECT COUNT(*) FROM services) s, (SELECT COUNT(*) FROM warm_pool) p`)
        .get();
    const before = rows();
    const flags = ['--db', file, '--disk-warn', '99', '--disk-block', '100'];
    const commands = [
      ['pool', 'claim', '--tenant', tenant, '--name', 'refused', ...flags],
      ['pool', 'refill', '--once', ...flags],
      ['service', 'create', '--tenant', tenant, '--name', 'refused', '--image', TEST_IMAGE, ...flags],
    ];
    for (const args of commands) {
      const r = await keeper(args, DEFAULT_RUNTIME, 60_000);
      expect(r.stderr, args.join(' ')).toMatch(REFUSAL);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
    }
    expect(rows()).toEqual(before);
    expect(await docker.listContainers({ 'ah.tenant': tenant })).toEqual([]);
    expect(await docker.listContainers({ 'ah.type': 'warm-pool' })).toEqual([]);
  });

  it('with --tenant-runtime runc, the documented way to accept the host kernel, service create runs its container under runc', async () => {
    const { file, tenant } = pool!;
    const r = await keeper(
      [
        'service',
        'create',
        '--tenant',
        tenant,
        '--name',
        'accepted',
        '--image',
        TEST_IMAGE,
        '--db',
        file,
        '--disk-warn',
        '99',
        '--disk-block',
        '100',
        '--tenant-runtime',
        'runc',
        '--json',
      ],
      DEFAULT_RUNTIME,
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect((await docker.inspectContainer(JSON.parse(r.stdout).containerId)).runtime).toBe('runc');
  });

  it('keeper status shows the runtime in use, that this engine lacks runsc, and runc as weaker isolation', async () => {
    const { file } = pool!;
    const gv = await keeper(['status', '--db', file, '--json'], DEFAULT_RUNTIME);
    expect(gv.code).toBe(0);
    expect(JSON.parse(gv.stdout).tenantRuntime).toEqual({
      runtime: 'runsc',
      registered: false,
      isolation: expect.stringMatching(/^gVisor/),
    });
    const gvText = await keeper(['status', '--db', file], DEFAULT_RUNTIME);
    expect(gvText.stdout).toMatch(
      /^tenant runtime runsc \(NOT registered with this engine\): gVisor: tenant code runs on gVisor's application kernel, as in ah$/m,
    );

    const rc = await keeper(['status', '--db', file, '--tenant-runtime', 'runc'], DEFAULT_RUNTIME);
    expect(rc.stdout).toMatch(
      /^tenant runtime runc \(registered\): WEAKER than ah's: tenant code runs on the host kernel \(runc\), not under gVisor$/m,
    );
  });
});

describe("the worker's check when the engine does not answer", () => {
  it('starts anyway (housekeeping and circuit timers outlive a Docker outage) and says the runtime is not verified', async () => {
    const lines: string[] = [];
    const log = createLogger({ format: 'json', write: (l) => lines.push(l) });
    const settings = testSettings({ tenantRuntime: 'runsc' });
    const down = new DockerClient('unix:///nonexistent/keeper-gvisor/docker.sock');
    // A worker on a configured Temporal: no fallback to runc.
    const onCluster = { log, embeddedTemporal: false };
    expect(await workerTenantRuntime({ docker: down, settings, ...onCluster })).toEqual({
      runtime: 'runsc',
      isolation: expect.any(String),
      verified: false,
    });
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ level: 'warn', msg: expect.stringMatching(/^tenant runtime not verified/), tenantRuntime: 'runsc' }),
    ]);
    // The engine that answers without runsc stops it, as a setting error (exit code 2).
    await expect(workerTenantRuntime({ docker, settings, ...onCluster })).rejects.toSatisfy(
      (e) => e instanceof TenantRuntimeMissing && e instanceof SettingsError,
    );
    expect(await workerTenantRuntime({ docker, settings: testSettings({ tenantRuntime: 'runc' }), ...onCluster })).toMatchObject({
      runtime: 'runc',
      verified: true,
    });
  });
});
