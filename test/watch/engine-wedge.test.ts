/**
 * A wedged engine under a real `keeper worker`: the proxy in front of the file's engine takes every request and
 * answers none (test/helpers/docker-proxy.ts `wedge`), as a deadlocked dockerd does, while the worker runs at its
 * default settings and a real Prometheus scrapes it with the shipped alert rules. Every wait has a deadline: the
 * looks are recorded failing since the wedge, `keeper status` and every command that touches the engine answer within
 * 15 s, the metric and the alert say so, a crash meanwhile is counted once the engine answers, the looks resume by
 * themselves, and a worker told to stop during a wedge ends within its shutdown grace and 15 s.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readLookStates } from '../../src/db/look-states';
import { keeper } from '../helpers/cli';
import { crashContainer } from '../helpers/crash';
import { waitFor } from '../helpers/fixtures';
import { ALERT_RULES, Prometheus } from '../helpers/prometheus';
import { addTenant, service } from '../reconcile/rows';
import { lookedAtService, watchedHost, type WatchedHost } from './world';

/** What an operator may wait for a command's answer while the engine hangs. */
const ANSWER_MS = 15_000;
/** The worker's shutdown grace (SHUTDOWN_GRACE), and the 15 s more a wedge may add. */
const STOP_MS = 30_000 + 15_000;
/** Generous bounds on a busy machine for what the worker does by itself. */
const BOUND_MS = 120_000;
const SILENT = /the engine did not answer.* within \d+ s/;

let h: WatchedHost;
let prometheus: Prometheus | undefined;

beforeAll(async () => {
  h = await watchedHost('engine-wedge', {}, { metrics: true });
  prometheus = await Prometheus.start({ targets: [new URL(h.metricsUrl).host], ruleFiles: [ALERT_RULES] });
}, 180_000);
afterAll(async () => {
  h?.proxy.release();
  await prometheus?.stop();
  await h?.stop();
}, 120_000);

/** `keeper <args>` on this host, through the proxy, as an operator runs it; and how long it took to answer. */
async function command(args: string[]) {
  const startedAt = Date.now();
  const env = { DOCKER_HOST: h.proxy.dockerHost, TEMPORAL_ADDRESS: inject('devServerAddress') };
  const r = await keeper([...args, '--db', h.file, '--host-id', h.hostId], env, 60_000);
  return { ...r, ms: Date.now() - startedAt };
}

const reconcileLook = () => readLookStates(h.db, h.hostId).find((l) => l.loop === 'reconcile');
const lookFailing = async () => (await prometheus!.query(`keeper_look_failing{keeper_host="${h.hostId}",loop="reconcile"}`))[0]?.value;

describe('a wedged engine under a real worker', () => {
  it('records the looks failing since the wedge, and every command answers within 15 s, saying so', async () => {
    const tenant = addTenant(h.db);
    const s = await lookedAtService(h, tenant, BOUND_MS);
    await waitFor('the metric of a working look', async () => (await lookFailing()) === 0, BOUND_MS, 500);

    const wedgedAtSec = Math.floor(Date.now() / 1000);
    h.proxy.wedge();
    await crashContainer(h.fixture.docker, s.cid); // the kernel's SIGKILL, straight to the engine: Docker restarts it
    const failing = await waitFor(
      'the reconcile look recorded failing',
      () => reconcileLook()?.failingSince != null && reconcileLook(),
      BOUND_MS,
      250,
    );
    expect(failing.failingSince).toBeGreaterThanOrEqual(wedgedAtSec);
    expect(failing.error).toMatch(SILENT);

    const status = await command(['status']);
    expect(status.code, status.stderr).toBe(0);
    expect(status.ms).toBeLessThan(ANSWER_MS);
    expect(status.stdout).toMatch(/^engine +NOT ANSWERING: docker [a-z.]+: .*the engine did not answer.* within 5 s$/m);
    expect(status.stdout).toMatch(/^tenant runtime \S+ \(engine not answering\)/m);
    expect(status.stdout).toMatch(/^ {2}reconcile .* since \d+ s(econds)? ago: .*the engine did not answer.* within \d+ s$/m);

    // Each command that touches the engine: one line that says it does not answer; those that read only the DB: their answer.
    const answered: Record<string, number> = { status: status.ms };
    for (const args of [['gc', '--dry-run'], ['service', 'restart', s.sid], ['service', 'logs', s.sid], ['health']]) {
      const r = await command(args);
      answered[args.join(' ')] = r.ms;
      expect(r.ms, args.join(' ')).toBeLessThan(ANSWER_MS);
      expect({ code: r.code, stderr: r.stderr.trim() }, args.join(' ')).toMatchObject({
        code: 1,
        stderr: expect.stringMatching(/^keeper: docker [a-z.]+: .*the engine did not answer.* within 5 s$/),
      });
    }
    // A tick runs its DB-only steps through an outage (W-10): it answers once its list has run out its deadline.
    for (const args of [
      ['pool', 'status'],
      ['crashes', s.sid],
      ['reconcile', '--once'],
    ]) {
      const r = await command(args);
      answered[args.join(' ')] = r.ms;
      expect(r.ms, args.join(' ')).toBeLessThan(ANSWER_MS);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      if (args[0] === 'reconcile') expect(r.stdout).toMatch(/^docker +UNREACHABLE: only DB steps ran$/m);
    }
    expect(service(h.db, s.sid).status).toBe('running'); // nothing a command was refused changed the service
    console.log(`a wedged engine: each command answered in (ms) ${JSON.stringify(answered)}`);

    // The metric, scraped by a real Prometheus, and the shipped alert on it (pending through its `for`).
    await waitFor('keeper_look_failing at 1', async () => (await lookFailing()) === 1, BOUND_MS, 500);
    const alert = await waitFor(
      'KeeperLookFailing for this host',
      async () => (await prometheus!.alerts()).find((a) => a.labels.alertname === 'KeeperLookFailing' && a.labels.keeper_host === h.hostId),
      BOUND_MS,
      500,
    );
    expect(alert.labels).toMatchObject({ loop: 'reconcile', severity: 'critical' });

    // The engine answers again: the looks resume by themselves, and the crash made during the wedge is counted, once.
    h.proxy.release();
    await waitFor('the crash counted', () => service(h.db, s.sid).crash_count === 1, BOUND_MS, 250);
    await waitFor('the reconcile look working again', () => reconcileLook()?.failingSince === null, BOUND_MS, 250);
    await waitFor('keeper_look_failing back at 0', async () => (await lookFailing()) === 0, BOUND_MS, 500);
    const after = await command(['status']);
    expect(after.stdout).toMatch(/^engine +Docker \S+ \(API [\d.]+\), \d+ running$/m);
    expect(service(h.db, s.sid).crash_count).toBe(1);
  }, 600_000);

  it('ends a worker told to stop during a wedge within its shutdown grace and 15 s', async () => {
    h.proxy.wedge();
    // The looks' calls now hang on the engine: wait until one has run out, so the stop meets calls in flight.
    await waitFor('a look to fail again', () => reconcileLook()?.failingSince != null, BOUND_MS, 250);
    const stoppedAt = Date.now();
    h.worker.child.kill('SIGTERM');
    const code = await Promise.race([h.worker.exited, new Promise((r) => setTimeout(r, STOP_MS + 30_000, 'still running'))]);
    const tookMs = Date.now() - stoppedAt;
    console.log(`a wedged engine: the worker ended ${tookMs} ms after SIGTERM`);
    expect(code).toBe(0);
    expect(tookMs).toBeLessThan(STOP_MS);
    expect(h.worker.output).toMatch(/keeper worker stopped/);
  }, 300_000);
});
