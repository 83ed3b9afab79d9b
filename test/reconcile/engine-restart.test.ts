/**
 * S1 on a real engine (RELIABILITY.md, the soak): dockerd's restart sets every container's RestartCount back to 0,
 * and when its 256-event buffer has rolled over as well, only the container's own times and the engine's start tell
 * the deaths since keeper's look. An engine of the test's own (the test restarts it) and a real SQLite state DB; the
 * tick's observe and apply steps are called directly, with no Temporal: counting is theirs alone. The deaths are the
 * kernel's kind: signals sent from the host to the container's process (an engine `kill` would make them stops).
 */
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerOptions, DockerClient } from '../../src/docker/client';
import { applyObservation } from '../../src/host/reconcile/apply';
import { observeHost } from '../../src/host/reconcile/observe';
import { crashPolicy } from '../../src/policy/deaths/decision';
import { dockerdPid, extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { freshDb, testDeps, testSettings, TEST_IMAGE, uniqueId, waitFor } from '../helpers/fixtures';
import { addService, addTenant, service } from './rows';

const ENGINE = 's1-restart';
let engine: ExtraEngine;

beforeAll(() => {
  engine = extraEngine(ENGINE);
}, 180_000);
afterAll(() => {
  if (engine) stopEngine(engine);
}, 300_000);

/** The service's process: exits 1 on SIGUSR2 (a crash), ignores SIGUSR1 (the buffer's filler), else sleeps. */
const SCRIPT = "trap 'exit 1' USR2; trap '' USR1; while true; do sleep 3600 & wait; done";

describe("dockerd's restart and the deaths after it (real engine)", () => {
  it('counts the deaths after a restart whose events the engine no longer has, from RestartCount whole', async () => {
    const { db } = freshDb();
    const settings = testSettings();
    const deps = testDeps({ db, docker: new DockerClient(engine.dockerHost), settings });
    const raw = new Dockerode(dockerOptions(engine.dockerHost)); // the test's own hands: signals and the filler
    const tick = async () => {
      const policy = crashPolicy(settings);
      return applyObservation(deps, policy, await observeHost(deps, policy, Math.floor(Date.now() / 1000)));
    };
    const tenant = addTenant(db);
    const sid = uniqueId('svc');
    const c = await raw.createContainer({
      name: `ah-${tenant}-${sid}`,
      Image: TEST_IMAGE,
      Cmd: ['sh', '-c', SCRIPT],
      Labels: { 'ah.tenant': tenant, 'ah.service': sid, 'ah.managed': 'true' },
      HostConfig: { RestartPolicy: { Name: 'unless-stopped' }, NetworkMode: 'none' },
    });
    await c.start();
    addService(db, tenant, { containerId: c.id }, sid);
    const state = async () =>
      (await c.inspect()) as { RestartCount: number; State: { Running: boolean; Restarting: boolean; Pid: number } };
    /** The process dies as the kernel's kill would end it, and Docker's policy restarts it: RestartCount `count`. */
    const dieTo = async (count: number) => {
      process.kill((await state()).State.Pid, 'SIGUSR2');
      await waitFor(
        `RestartCount ${count}, running`,
        async () => {
          const s = await state();
          return s.RestartCount === count && s.State.Running && !s.State.Restarting && s.State.Pid > 0;
        },
        30_000,
      );
    };

    expect((await tick()).crashes).toBe(0); // keeper's first look: the baseline
    await dieTo(1);
    expect((await tick()).crashes).toBe(1); // keeper's snapshot: RestartCount 1

    // dockerd restarts: it stops the container, and its start brings it back with RestartCount 0.
    const pid = dockerdPid(engine)!;
    process.kill(pid, 'SIGTERM');
    await waitFor('dockerd to exit', () => dockerdPid(engine) !== pid && !dockerdPid(engine), 90_000);
    extraEngine(ENGINE);
    await waitFor(
      'the container back, RestartCount 0',
      async () => (await state()).State.Running && (await state()).RestartCount === 0,
      60_000,
    );
    await dieTo(1);
    await dieTo(2); // the delta from keeper's 1 says 1 death; there were 2

    // The engine's 256-event buffer rolls over (as 200 containers' starts roll it): the deaths' events are gone.
    const filler = await raw.createContainer({ Image: TEST_IMAGE, Cmd: ['sh', '-c', SCRIPT], HostConfig: { NetworkMode: 'none' } });
    await filler.start();
    for (let i = 0; i < 300; i++) await filler.kill({ signal: 'SIGUSR1' });
    const since = Math.floor(Date.now() / 1000) - 120;
    const kept = await deps.docker.readEvents({ since, until: Math.floor(Date.now() / 1000) + 1, labels: { 'ah.service': sid } });
    expect(kept.filter((e) => e.action === 'die')).toEqual([]);

    expect((await tick()).crashes).toBe(2);
    expect(service(db, sid)).toMatchObject({ crash_count: 3 });
    expect((await tick()).crashes).toBe(0); // once
    db.close();
  }, 240_000);
});
