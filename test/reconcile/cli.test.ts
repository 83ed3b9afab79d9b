/**
 * The operator's commands, in-process through `main`, with no TEMPORAL_ADDRESS: each brings up its own embedded
 * dev server and worker. `reconcile --once` opens a crash loop's circuit; `circuit reset` brings it back.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openStateDb } from '../../src/db/open';
import { keeper as keeperBin, keeperInProcess } from '../helpers/cli';
import { EngineFixture, tempDir, uniqueId, waitFor } from '../helpers/fixtures';
import { addService, addTenant, runServiceContainer, service } from './helpers';

const engine = new EngineFixture();
afterEach(() => engine.cleanup());

/** The commands below pass their arguments one by one. */
const keeper = (...args: string[]) => keeperInProcess(args);

describe('keeper reconcile / circuit (embedded Temporal)', () => {
  it('reconcile --once opens a crash loop, circuit list shows it, circuit reset brings it back', async () => {
    const file = path.join(tempDir(), 'state.db');
    const host = uniqueId('host-');
    const db = openStateDb(file);
    const tenant = addTenant(db);
    const sid = uniqueId('svc');
    const cid = await runServiceContainer(engine, tenant, sid, { cmd: ['sh', '-c', 'exit 1'], restartPolicy: 'unless-stopped' });
    await waitFor('5 restarts', async () => (await engine.docker.inspectContainer(cid)).restartCount >= 5, 60_000, 250);
    addService(db, tenant, { containerId: cid }, sid);
    db.close();
    const common = ['--db', file, '--host-id', host];

    const tick = await keeper('reconcile', '--once', '--json', ...common);
    expect(tick.err).not.toMatch(/^keeper:/m);
    expect(tick.code).toBe(0);
    expect(JSON.parse(tick.out)).toMatchObject({ opened: 1, dockerReachable: true });

    const list = await keeper('circuit', 'list', '--json', ...common);
    expect(JSON.parse(list.out)).toEqual([expect.objectContaining({ serviceId: sid, open: true, opening: 1, escalation: 1 })]);
    const table = await keeper('circuit', 'list', ...common);
    expect(table.out).toMatch(/^SERVICE +TENANT +STATE +STATUS +OPENING +ESCALATION +RETRY AT +OPENED +WORKFLOW$/m);
    expect(table.out).toMatch(new RegExp(`^${sid} +${tenant} +open +crashed +1 +1 `, 'm'));
    expect((await engine.docker.inspectContainer(cid)).status).toBe('exited');

    const reset = await keeper('circuit', 'reset', sid, ...common);
    expect(reset.code).toBe(0);
    expect(reset.out).toContain(`circuit of ${sid} closed (opening 1); service running`);
    const after = openStateDb(file);
    expect(service(after, sid)).toMatchObject({ circuit_open: 0, crash_count: 0, status: 'running' });
    after.close();
    expect(['running', 'restarting']).toContain((await engine.docker.inspectContainer(cid)).status);
  }, 120_000);

  it('reconcile --once on its own in-memory server drains its work: an expired circuit is recovered before it exits', async () => {
    // The built CLI in a process of its own: once it exits, its in-memory server and worker are gone.
    for (let run = 1; run <= 3; run++) {
      const file = path.join(tempDir(), 'state.db');
      const db = openStateDb(file);
      const tenant = addTenant(db);
      const sid = uniqueId('svc');
      const cid = await runServiceContainer(engine, tenant, sid, { restartPolicy: 'no' }, false);
      addService(
        db,
        tenant,
        { status: 'crashed', containerId: cid, circuitOpen: 1, circuitOpenCount: 1, circuitRetryAt: Math.floor(Date.now() / 1000) - 5 },
        sid,
      );
      const r = await keeperBin(['reconcile', '--once', '--json', '--recovery', 'restart', '--db', file, '--host-id', uniqueId('host-')]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out).toMatchObject({ circuitsExpired: 1, run: { ranBy: 'this command', drained: { handedOn: [] } } });
      expect(out.run.drained.finished).toEqual(
        expect.arrayContaining([expect.objectContaining({ type: 'circuitBreaker', status: 'COMPLETED' })]),
      );
      expect(service(db, sid), `run ${run}`).toMatchObject({ circuit_open: 0, status: 'running' });
      expect((await engine.docker.inspectContainer(cid)).status, `run ${run}`).toBe('running');
      db.close();
    }
  }, 180_000);

  it('refuses reconcile without --once and reset of an unknown service, with exit code 2', async () => {
    const file = path.join(tempDir(), 'state.db');
    openStateDb(file).close(); // as the host's worker would have: only `keeper worker` creates a state DB
    expect((await keeper('reconcile', '--db', file)).code).toBe(2);
    const r = await keeper('circuit', 'reset', 'nope', '--db', file);
    expect(r.code).toBe(2);
    expect(r.err).toContain('no service nope');
  });
});
