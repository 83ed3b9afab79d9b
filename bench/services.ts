/** Running service containers for the benches, made as ah makes them (name, labels, restart policy), with their rows. */
import type { StateDb } from '../src/db/open';
import type { DockerClient } from '../src/docker/client';
import { addService } from '../test/reconcile/rows';

const IMAGE = 'keeper-test/busybox:latest';

/** Runs `fn` for each item, `width` at a time. */
export async function inBatches<T>(items: T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

/**
 * Services `svc-<prefix>-<i>` of `tenant` for each index, each a running container (8 made at a time). Each id is
 * added to `made` as soon as it exists, so a caller that cleans up after a failure halfway finds them; returns it.
 */
export async function runServices(
  docker: DockerClient,
  db: StateDb,
  tenant: string,
  prefix: string,
  indexes: number[],
  made: string[] = [],
): Promise<string[]> {
  await inBatches(indexes, 8, async (i) => {
    const sid = `svc-${prefix}-${i}`;
    const cid = await docker.createContainer({
      name: `ah-${tenant}-${sid}`,
      image: IMAGE,
      cmd: ['sleep', '86400'],
      restartPolicy: 'unless-stopped',
      network: 'none',
      labels: { 'ah.tenant': tenant, 'ah.service': sid, 'ah.managed': 'true' },
    });
    made.push(cid);
    await docker.startContainer(cid);
    addService(db, tenant, { containerId: cid }, sid);
  });
  return made;
}
