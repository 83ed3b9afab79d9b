/**
 * One claimant in its own process, for the concurrency test: it opens its own SQLite connection and Docker
 * client, says "ready", waits for "go" on stdin (so that all claimants start together), claims, and prints
 * the result as one JSON line.
 */
import { claimEnvironment } from '../../src/host/pool/claim';
import { openStateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { TEST_TENANT_RUNTIME } from '../helpers/fixtures';

const [dbFile, tenant, name, template] = process.argv.slice(2);
const db = openStateDb(dbFile, { create: false });
const docker = new DockerClient();
process.stdout.write('ready\n');
process.stdin.once('data', async () => {
  try {
    const r = await claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant, name, template });
    process.stdout.write(JSON.stringify({ ok: true, result: r }) + '\n');
  } catch (err) {
    process.stdout.write(JSON.stringify({ ok: false, error: (err as Error).message }) + '\n');
  } finally {
    db.close();
    process.exit(0);
  }
});
