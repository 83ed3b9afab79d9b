/**
 * `keeper service create --label`: the crash policy labels an operator sets on a standalone host, through the
 * built CLI against the real engine and a real state DB. Nothing is mocked.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { DockerClient } from '../../src/docker/client';
import { keeper } from '../helpers/cli';
import { freshDb, TEST_IMAGE, uniqueId } from '../helpers/fixtures';

const { db: handle, file: db } = freshDb();
handle.close();
const docker = new DockerClient();
const tenant = uniqueId('lbl-');
const created: string[] = [];
afterAll(async () => {
  for (const id of created) await docker.removeContainer(id, { force: true }).catch(() => undefined);
  await docker.removeNetwork(`ah-tenant-${tenant}`).catch(() => undefined);
});

describe('keeper service create --label', () => {
  it("sets keeper.* labels on the container, beside ah's own", async () => {
    const r = await keeper([
      'service',
      'create',
      '--db',
      db,
      '--tenant',
      tenant,
      '--name',
      'web',
      '--image',
      TEST_IMAGE,
      '--label',
      'keeper.crash-threshold=2',
      '--label',
      'keeper.expected-exit-codes=0,143',
      '--json',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const s = JSON.parse(r.stdout);
    created.push(s.containerId);
    expect((await docker.inspectContainer(s.containerId)).labels).toEqual({
      'ah.tenant': tenant,
      'ah.service': s.id,
      'ah.managed': 'true',
      'keeper.crash-threshold': '2',
      'keeper.expected-exit-codes': '0,143',
    });
  });

  it("refuses a label that is not keeper's, or not KEY=VALUE, with one line and exit 2", async () => {
    const ah = await keeper([
      'service',
      'create',
      '--db',
      db,
      '--tenant',
      tenant,
      '--name',
      'x',
      '--image',
      TEST_IMAGE,
      '--label',
      'ah.service=other',
    ]);
    expect(ah).toMatchObject({
      code: 2,
      stderr: 'keeper: invalid --label "ah.service": only keeper.* labels can be set (e.g. keeper.crash-threshold=2)\n',
    });
    const kv = await keeper([
      'service',
      'create',
      '--db',
      db,
      '--tenant',
      tenant,
      '--name',
      'x',
      '--image',
      TEST_IMAGE,
      '--label',
      'keeper.x',
    ]);
    expect(kv).toMatchObject({ code: 2, stderr: 'keeper: invalid --label "keeper.x": use KEY=VALUE\n' });
  });
});
