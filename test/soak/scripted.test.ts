/**
 * The soak (bench/soak/) in the suite, with nothing random: its scripted schedule (bench/soak/script.ts) runs each
 * fault kind once, in a fixed order, on 16 services of an engine of this file's own (the script restarts its
 * dockerd), with a Temporal dev server, fault proxy, webhook receiver and built worker of the run's own. The
 * engine's restart comes first, then the services' faults (a crash, an expected and an unexpected exit 3, an OOM
 * kill, a failing health check, a crash loop that opens a circuit), then the other host faults (the worker
 * SIGKILLed, SQLite's write lock held, the engine wedged, keeper's event stream silent, the Temporal server
 * SIGKILLed), each with a death while it is under way. Then its ledger must balance: every death Docker recorded counted exactly once by keeper's rules,
 * the opening alerted under a key of its own, the open circuit's timer alive through every host fault (a backoff
 * of 10 minutes keeps it open to the end), no stop outside an open circuit, no row half-written. On failure the
 * message is the soak's report, and the run's directory (state DB, Temporal DB, worker log) is kept.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_KEEPER, DEFAULTS, HOST_FAULTS, SERVICE_FAULTS, type SoakOptions } from '../../bench/soak/options';
import { runSoak } from '../../bench/soak/run';
import { SCRIPTED_SERVICES } from '../../bench/soak/script';
import { extraEngine, stopEngine } from '../helpers/engines';

const SCRIPTED: SoakOptions = {
  ...DEFAULTS,
  schedule: 'scripted',
  services: SCRIPTED_SERVICES,
  seed: 0,
  durationMs: 0,
  sampleEveryMs: 10_000,
  settleBoundMs: 120_000,
  settleQuietMs: 3_000,
  healthCheckEveryMs: 2_000,
  keeper: { ...DEFAULT_KEEPER, circuitBackoff: '10m' },
};

describe('the soak, scripted', () => {
  it('balances its ledger after each fault kind once, in a fixed order', async () => {
    const lines: string[] = [];
    const result = await runSoak(
      SCRIPTED,
      { start: async () => extraEngine('soak-script'), stop: async (engine) => stopEngine(engine) },
      (line) => lines.push(line),
    );
    const why = `${result.markdown}\n\n${lines.join('\n')}`;
    const injected = [...HOST_FAULTS, ...SERVICE_FAULTS].filter((kind) => result.faults.counts.get(kind));
    expect(injected, why).toEqual([...HOST_FAULTS, ...SERVICE_FAULTS]);
    const { crashes } = result.summary;
    // Seven kills, an exit 3 its label does not list, an OOM kill and the loop's five that opened the circuit, at
    // least: each one keeper must count (none unobservable), each counted once.
    expect(crashes.docker, why).toBeGreaterThanOrEqual(14);
    expect({ missed: crashes.missed, extra: crashes.extra }, why).toEqual({ missed: 0, extra: 0 });
    expect(result.summary.expectedExits, why).toMatchObject({ docker: 1, counted: 1, missed: 0, extra: 0 });
    expect(result.summary.healthFailures, why).toMatchObject({ docker: 1, counted: 1, missed: 0, extra: 0 });
    expect(result.summary.liveTimers, why).toMatchObject({ open: 1, live: 1, problems: [] });
    expect(result.summary.unobservable, why).toEqual([]);
    expect(result.ledger.alerts.openings, why).toBe(1);
    expect(result.balanced, why).toBe(true);
  }, 420_000);
});
