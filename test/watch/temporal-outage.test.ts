/**
 * A crash during a Temporal outage: a real `keeper worker` on a dev server of this test's own, which is SIGKILLed
 * and restarted on the same file and port. The run request that the server cannot take is kept and sent again
 * until it is taken, so the crash is committed soon after the server answers again, not at the schedule's next tick
 * an hour later. The worker itself rides out the outage.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { crashContainer } from '../helpers/crash';
import { tempDir, waitFor } from '../helpers/fixtures';
import { addTenant, service } from '../reconcile/rows';
import { lookedAtService, watchedHost, type WatchedHost } from './world';

const BOUND_MS = 120_000;
const dir = tempDir('keeper-outage-');
const dbFile = path.join(dir, 'temporal.db');
let port: number;
let server: DevServer | undefined;
let h: WatchedHost;

beforeAll(async () => {
  port = await freePort();
  server = await startDevServer({ dbFile, port });
  h = await watchedHost('look-outage', {}, { temporalAddress: server.address });
}, 180_000);
afterAll(async () => {
  await h?.stop();
  await server?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('a crash while Temporal is down', () => {
  it('is committed once the server answers again, from the request the worker kept', async () => {
    const { sid, cid } = await lookedAtService(h, addTenant(h.db), BOUND_MS);

    server!.process.kill('SIGKILL');
    await new Promise((r) => server!.process.once('exit', r));
    server = undefined;
    await crashContainer(h.fixture.docker, cid);
    await h.worker.waitForOutput(/Temporal did not take a run request; kept and sent again until it does/, BOUND_MS);
    expect(service(h.db, sid).crash_count).toBe(0);

    server = await startDevServer({ dbFile, port });
    await waitFor('the crash committed', () => service(h.db, sid).crash_count === 1, BOUND_MS, 250);
    // The kept request is taken too (the crash may already have been committed by a run whose workflow task the
    // worker was running when the server died, and finished once it answered).
    await h.worker.waitForOutput(/run request taken after Temporal did not take it/, BOUND_MS);
    expect(h.worker.child.exitCode).toBeNull();
  }, 400_000);
});
