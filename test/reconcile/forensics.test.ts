/**
 * Crash forensics on the real engine: each way a tenant's container dies is recorded with its reason and the
 * dead run's last log lines, in keeper_crash_records, by a real reconcile tick on the dev server. Nothing is
 * mocked: the OOM killer is the kernel's (a 16 MB memory limit), the signal is a real SIGKILL from the host.
 */
import fs from 'node:fs';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { listCrashRecords, type CrashRecordRow } from '../../src/db/crash-records';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { LOG_TAIL_MAX_BYTES, LOG_TAIL_MAX_LINES } from '../../src/policy/log-tail';
import type { Settings } from '../../src/settings';
import { keeper } from '../helpers/cli';
import { crashContainer } from '../helpers/crash';
import { DockerProxy } from '../helpers/docker-proxy';
import { EngineFixture, freshDb, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerEnv } from '../helpers/temporal';
import { addService, addTenant, deployments, runServiceContainer, runTick, service } from './helpers';

let env: TestWorkflowEnvironment;
let db: StateDb;
let dbFile: string;
let settings: Settings;
let tenant: string;
const engine = new EngineFixture();
const docker = new DockerClient();
const deps = () => ({ db, docker, settings });

beforeAll(async () => {
  env = await devServerEnv();
});
afterAll(async () => {
  await env?.teardown();
});
afterEach(async () => {
  await engine.cleanup();
  db?.close();
});
const setup = () => {
  ({ db, file: dbFile } = freshDb());
  settings = testSettings({ db: dbFile });
  tenant = addTenant(db);
};

/** A service whose container runs `script` once (no restart policy) and has exited by itself. */
async function deadService(script: string): Promise<{ sid: string; cid: string }> {
  const sid = uniqueId('svc');
  const cid = await runServiceContainer(engine, tenant, sid, { cmd: ['sh', '-c', script], restartPolicy: 'no' });
  await waitFor('container to exit', async () => (await docker.inspectContainer(cid)).status === 'exited', 30_000);
  return addDeadService(sid, cid);
}

/**
 * The same, killed by the kernel's OOM killer, once the engine says so (OOMKilled, or its `oom` event): on a busy
 * machine Docker can report the exit (137) before it has handled the cgroup's OOM event and set OOMKilled, and what
 * it says then is what a tick records. The bound is for a loaded machine; its message says what the engine said last.
 */
async function oomKilledService(): Promise<{ sid: string; cid: string }> {
  const sid = uniqueId('svc');
  const sinceSec = Math.floor(Date.now() / 1000) - 1;
  // tail buffers a line that never ends: /dev/zero grows it past the 16 MB limit.
  const cmd = ['sh', '-c', 'echo "loading model"; exec tail /dev/zero'];
  const cid = await runServiceContainer(engine, tenant, sid, { cmd, restartPolicy: 'no', memoryBytes: 16 * 1024 * 1024 });
  let said = 'nothing yet';
  const oomEvent = async () =>
    (await docker.readEvents({ since: sinceSec, until: Math.ceil(Date.now() / 1000), types: ['container'], actions: ['oom'] })).some(
      (e) => e.id === cid,
    );
  await waitFor(
    'the engine to report the OOM kill',
    async () => {
      const c = await docker.inspectContainer(cid);
      said = `status ${c.status}, exit code ${c.exitCode}, OOMKilled ${c.oomKilled}`;
      return c.status === 'exited' && (c.oomKilled || (await oomEvent()));
    },
    90_000,
    250,
  ).catch((err: Error) => {
    throw new Error(`${err.message} (the engine said last: ${said})`);
  });
  return addDeadService(sid, cid);
}

function addDeadService(sid: string, cid: string): { sid: string; cid: string } {
  addService(db, tenant, { containerId: cid }, sid);
  return { sid, cid };
}

async function onlyRecord(sid: string): Promise<CrashRecordRow> {
  const summary = await runTick(env, deps());
  expect(summary.crashes).toBe(1);
  const records = listCrashRecords(db, sid, 10);
  expect(records).toHaveLength(1);
  return records[0];
}

describe('crash forensics on the real engine', () => {
  it('records a process that exits 3: its code, no signal, the time of death and both output streams', async () => {
    setup();
    const before = Date.now();
    const { sid, cid } = await deadService('echo "listening on :8000"; echo "fatal: DATABASE_URL is not set" >&2; exit 3');
    const r = await onlyRecord(sid);
    expect(r).toMatchObject({
      serviceId: sid,
      containerId: cid,
      exitCode: 3,
      oomKilled: false,
      signal: null,
      seenBy: 'look',
      reason: 'exit code 3',
      logNote: '',
    });
    // The engine copies the two streams separately: lines written within a millisecond of each other may swap.
    expect(r.logTail.split('\n').sort()).toEqual(['fatal: DATABASE_URL is not set', 'listening on :8000']);
    expect(r.diedAtMs).toBeGreaterThanOrEqual(before - 1000);
    expect(r.diedAtMs).toBeLessThanOrEqual(Date.now());
    // ah's form, with the reason in it: what ah's API and dashboards show.
    expect(service(db, sid).last_error).toBe('container exited (exit code 3)');
    expect(deployments(db, sid)[0]).toMatchObject({ status: 'crashed', error_message: 'container exited (exit code 3)' });
  });

  it("records an OOM kill as the kernel's, with the run's last lines before it", async () => {
    setup();
    const { sid } = await oomKilledService();
    const r = await onlyRecord(sid);
    expect(r).toMatchObject({
      exitCode: 137,
      oomKilled: true,
      signal: 'SIGKILL',
      reason: 'exit code 137 (OOM killed)',
      logTail: 'loading model',
    });
    expect(deployments(db, sid)[0].error_message).toBe('container exited (exit code 137 (OOM killed))');
  }, 180_000);

  // Docker reports an OOM kill late under load: the exit (137) first, OOMKilled and the `oom` event only once it has
  // handled the kernel's notification. The proxy makes the engine's answers that late, deliberately.
  describe('when the engine reports the OOM kill late', () => {
    let proxy: DockerProxy;
    afterEach(async () => {
      await proxy?.close();
    });
    const viaProxy = async () => {
      proxy = await DockerProxy.start();
      return { db, docker: new DockerClient(proxy.dockerHost), settings };
    };

    it("records it as an OOM kill at once when the engine's oom event is out but its inspect still says OOMKilled false", async () => {
      setup();
      const { sid } = await oomKilledService();
      const through = await viaProxy();
      proxy.reportOomLate({ inspect: true, events: false });
      expect((await runTick(env, through)).crashes).toBe(1);
      expect(listCrashRecords(db, sid, 10)).toEqual([
        expect.objectContaining({ exitCode: 137, oomKilled: true, reason: 'exit code 137 (OOM killed)' }),
      ]);
    }, 180_000);

    it('corrects the SIGKILL it recorded once the oom event is out: the next tick finds it and says so', async () => {
      setup();
      const { sid } = await oomKilledService();
      const through = await viaProxy();
      proxy.reportOomLate({ inspect: true, events: true });
      expect((await runTick(env, through)).crashes).toBe(1);
      expect(listCrashRecords(db, sid, 10)).toEqual([expect.objectContaining({ oomKilled: false, reason: 'exit code 137 (SIGKILL)' })]);
      proxy.reportOomLate(undefined);
      const next = await runTick(env, through);
      expect(next).toMatchObject({ crashes: 0, oomConfirmed: 1 });
      expect(listCrashRecords(db, sid, 10)).toEqual([
        expect.objectContaining({ exitCode: 137, oomKilled: true, signal: 'SIGKILL', reason: 'exit code 137 (OOM killed)' }),
      ]);
      expect((await runTick(env, through)).oomConfirmed ?? 0).toBe(0); // once
    }, 180_000);
  });

  it('records a process killed by a signal from outside (not OOM): SIGKILL from its exit code', async () => {
    setup();
    const sid = uniqueId('svc');
    const cid = await runServiceContainer(engine, tenant, sid, {
      cmd: ['sh', '-c', 'echo "worker ready"; exec sleep 3600'],
      restartPolicy: 'no',
    });
    await waitFor('its output', async () => (await docker.containerLogs(cid, 5)).includes('worker ready'));
    addService(db, tenant, { containerId: cid }, sid);
    expect((await runTick(env, deps())).crashes).toBe(0);
    await crashContainer(docker, cid);
    await waitFor('container to exit', async () => (await docker.inspectContainer(cid)).status === 'exited');
    const r = await onlyRecord(sid);
    expect(r).toMatchObject({
      exitCode: 137,
      oomKilled: false,
      signal: 'SIGKILL',
      reason: 'exit code 137 (SIGKILL)',
      seenBy: 'look',
      logTail: 'worker ready',
    });
  });

  it('records a death Docker already restarted from its die event, with the dead run’s lines only', async () => {
    setup();
    const sid = uniqueId('svc');
    // Each run prints its number: the dead run's tail must hold "run 0" and not the restarted run's "run 1".
    const script = 'n=$(cat /tmp/runs 2>/dev/null || echo 0); echo "run $n"; echo $((n+1)) > /tmp/runs; exec sleep 3600';
    const cid = await runServiceContainer(engine, tenant, sid, { cmd: ['sh', '-c', script], restartPolicy: 'unless-stopped' });
    await waitFor('first run', async () => (await docker.containerLogs(cid, 5)).includes('run 0'));
    addService(db, tenant, { containerId: cid }, sid);
    expect((await runTick(env, deps())).crashes).toBe(0);
    await crashContainer(docker, cid);
    await waitFor('Docker to restart it', async () => {
      const d = await docker.inspectContainer(cid);
      return d.restartCount === 1 && d.status === 'running' && (await docker.containerLogs(cid, 5)).includes('run 1');
    });
    const r = await onlyRecord(sid);
    expect(r).toMatchObject({
      seenBy: 'event',
      exitCode: 137,
      oomKilled: false,
      signal: 'SIGKILL',
      reason: 'exit code 137 (SIGKILL), restarted by Docker',
    });
    expect(r.logTail).toBe('run 0');
    expect(service(db, sid).last_error).toBe('container restarted by Docker after 1 crash (last: exit code 137 (SIGKILL))');
    expect(deployments(db, sid)[0]).toMatchObject({
      status: 'crashed',
      error_message: 'container restarted by Docker after 1 crash (last: exit code 137 (SIGKILL))',
    });
  });

  it('records a death Docker restarted whose die event cannot be read (restart count only) with what the inspect still has', async () => {
    setup();
    const sid = uniqueId('svc');
    // The first run is OOM killed; the run Docker starts after it finds /tmp/ran and stays up.
    const script = 'if [ ! -f /tmp/ran ]; then touch /tmp/ran; echo "loading model"; exec tail /dev/zero; fi; exec sleep 3600';
    const cid = await runServiceContainer(engine, tenant, sid, {
      cmd: ['sh', '-c', script],
      restartPolicy: 'unless-stopped',
      memoryBytes: 16 * 1024 * 1024,
    });
    await waitFor(
      'Docker to restart it after the OOM kill',
      async () => {
        const d = await docker.inspectContainer(cid);
        return d.restartCount === 1 && d.status === 'running';
      },
      30_000,
    );
    addService(db, tenant, { containerId: cid }, sid);
    const proxy = await DockerProxy.start();
    try {
      proxy.fail({ method: 'GET', path: /^\/events/, status: 500 });
      expect((await runTick(env, { ...deps(), docker: new DockerClient(proxy.dockerHost) })).crashes).toBe(1);
      expect(proxy.requests.filter((q) => q.injected).length).toBeGreaterThan(0);
    } finally {
      await proxy.close();
    }
    const [r] = listCrashRecords(db, sid, 10);
    // A running container's State.ExitCode reads 0 again; its OOMKilled stays until the next death.
    expect(r).toMatchObject({
      seenBy: 'restart-count',
      exitCode: null,
      oomKilled: true,
      reason: 'OOM killed, exit code unknown, restarted by Docker',
    });
    const reason = 'container restarted by Docker after 1 crash (last: OOM killed, exit code unknown)';
    expect(service(db, sid).last_error).toBe(reason);
    expect(deployments(db, sid)[0]).toMatchObject({ status: 'crashed', trigger: 'reconciler', error_message: reason });
  });

  it("`keeper status` shows each service's last crash (how long ago, why) and the tick that counted it in words; `--json` the raw rows", async () => {
    setup();
    const { sid } = await oomKilledService();
    const calm = addService(db, tenant, { status: 'stopped', containerId: null });
    await onlyRecord(sid);
    db.close();
    const text = await keeper(['status', '--db', dbFile]);
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout).toMatch(/^ {2}service +tenant +name +status +crashes +circuit +retry at +escalation +last crash$/m);
    expect(text.stdout).toMatch(
      new RegExp(`^  ${sid} +${tenant} +${sid} +crashed +1 +closed +- +0 +\\d+ s ago: exit code 137 \\(OOM killed\\)$`, 'm'),
    );
    expect(text.stdout).toMatch(new RegExp(`^  ${calm} +${tenant} +${calm} +stopped +0 +closed +- +0 +-$`, 'm'));
    // ok, or a warning when another test's container on this engine looks like split-brain to this host.
    expect(text.stdout).toMatch(/^ {2}reconcile +\d+ s ago +(ok|warning): 1 service, 1 crash, 0 circuits opened\b/m);
    const json = JSON.parse((await keeper(['status', '--db', dbFile, '--json'])).stdout);
    expect(json.services.find((v: { id: string }) => v.id === sid).lastCrash).toMatchObject({
      reason: 'exit code 137 (OOM killed)',
      diedAtMs: expect.any(Number),
    });
    expect(json.services.find((v: { id: string }) => v.id === calm).lastCrash).toBeNull();
    expect(json.loops.find((l: { loop: string }) => l.loop === 'reconcile').result).toMatchObject({ checked: 1, crashes: 1, opened: 0 });
    db = freshDb().db; // afterEach closes it
  }, 180_000);

  it('keeps at most 50 lines and 8 kB, with terminal escapes and control characters taken out', async () => {
    setup();
    const script = [
      'i=0; while [ $i -lt 200 ]; do printf "line %03d \\033[31mred\\033[0m \\007bell\\r\\n" $i; i=$((i+1)); done',
      'printf "\\033]0;title\\007\\033[2Jlast\\n"; exit 1',
    ].join('; ');
    const { sid } = await deadService(script);
    const r = await onlyRecord(sid);
    const lines = r.logTail.split('\n');
    expect(lines.length).toBeLessThanOrEqual(LOG_TAIL_MAX_LINES);
    expect(Buffer.byteLength(r.logTail)).toBeLessThanOrEqual(LOG_TAIL_MAX_BYTES);
    expect(lines[lines.length - 1]).toBe('last');
    expect(lines[lines.length - 2]).toBe('line 199 red bell');
    expect(r.logTail).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
  });

  it('keeps no log lines in a state DB that others can read, and says why', async () => {
    setup();
    expect(fs.statSync(dbFile).mode & 0o777).toBe(0o600);
    fs.chmodSync(dbFile, 0o644);
    const { sid } = await deadService('echo "secret=hunter2"; exit 2');
    const r = await onlyRecord(sid);
    expect(r).toMatchObject({ exitCode: 2, logTail: '' });
    expect(r.logNote).toContain('readable by others (mode 644; chmod 600 it)');
  });

  it('`keeper crashes` lists them, newest first, as text and as JSON; an unknown service is one line, exit 1', async () => {
    setup();
    const { sid } = await deadService('echo "out of retries"; exit 3');
    await onlyRecord(sid);
    db.close();
    const text = await keeper(['crashes', sid, '--db', dbFile]);
    expect(text.stderr).toBe('');
    expect(text.stdout).toMatch(
      new RegExp(
        `^${sid}: 1 most recent death, newest first\\n\\n\\S+Z  exit code 3\\n  seen by look, dated by live, container [0-9a-f]{12}\\n  \\| out of retries\\n$`,
      ),
    );
    const json = JSON.parse((await keeper(['crashes', sid, '--json', '--db', dbFile])).stdout);
    expect(json).toMatchObject({ serviceId: sid, deaths: [{ exitCode: 3, reason: 'exit code 3', logTail: 'out of retries' }] });
    const unknown = await keeper(['crashes', 'svc-nope', '--db', dbFile]);
    expect(unknown).toMatchObject({ code: 1, stderr: 'keeper: no service svc-nope, and no crash recorded for it\n' });
    db = freshDb().db; // afterEach closes it
  });
});
