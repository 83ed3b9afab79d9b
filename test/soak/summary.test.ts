/**
 * `npm run soak`'s flags (bench/soak/options.ts) and its ledger as one JSON object (bench/soak/summary.ts), on a
 * made-up run: which deaths are missed, which records extra, which deaths no look could have seen, and the fault
 * active at each. Pure: no engine, no keeper.
 */
import { describe, expect, it } from 'vitest';
import { FaultLog } from '../../bench/soak/faults';
import { containerLedger, type KeeperRecord, type Ledger } from '../../bench/soak/ledger';
import { CommanderError, DEFAULTS, parseSoakArgs, replayCommand } from '../../bench/soak/options';
import type { SoakService } from '../../bench/soak/services';
import { summaryOf } from '../../bench/soak/summary';
import { rssDrift, type UsageSample } from '../../bench/soak/usage';
import { ContainerTruth, engineWindows } from '../../bench/soak/truth';

describe("npm run soak's flags", () => {
  it('reads --minutes (fractions too), --seed and --json, and prints the command that replays the run', () => {
    const o = parseSoakArgs(['--services', '12', '--minutes', '0.5', '--seed', '42', '--json']);
    expect(o).toMatchObject({ services: 12, durationMs: 30_000, seed: 42, json: true });
    expect(replayCommand(o)).toBe('npm run soak -- --services 12 --minutes 0.5 --seed 42');
    const d = parseSoakArgs([]);
    expect(d).toMatchObject({ services: 200, durationMs: DEFAULTS.durationMs, json: false });
    expect(Number.isInteger(d.seed)).toBe(true);
  });

  it.each([
    [['--minutes', '0'], /--minutes must be a number of minutes above 0/],
    [['--minutes', 'ten'], /--minutes must be .* got "ten"/],
    [['--services', '0'], /--services must be a whole number from 1 to 2000, got "0"/],
    [['--seed', '-1'], /--seed must be a whole number/],
    [['--host-faults', 'worker-kill,meteor'], /--host-faults: unknown meteor; known: /],
    [['--duration', '5m'], /unknown option '--duration'/],
  ])('refuses %j in one line that names it', (argv, why) => {
    let err: unknown;
    try {
      parseSoakArgs(argv);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CommanderError);
    expect((err as Error).message).toMatch(why);
    expect((err as Error).message).not.toContain('\n');
  });
});

const CID = 'd'.repeat(64);
const service: SoakService = {
  index: 3,
  serviceId: 'svc-3',
  containerId: CID,
  ctlDir: '/nowhere',
  health: false,
  expectedExitCodes: [],
  oom: true,
};

function record(id: number, diedAtMs: number): KeeperRecord {
  const fields = { seenBy: 'event', datedBy: 'live', expected: 0, exitCode: 137 };
  return { id, serviceId: 'svc-3', containerId: CID, diedAtMs, recordedAt: Math.floor(diedAtMs / 1000), ...fields };
}

function ledgerOf(records: KeeperRecord[]): Ledger {
  // dockerd shut down from 30 s to 40 s: the death at 35 s is its own during it (unobservable after the restart).
  const engine = engineWindows([{ fromMs: 30_000, toMs: 40_000 }]);
  const truth = new ContainerTruth(CID);
  const deaths: [number, string, number?][] = [
    [1_000, 'die', 137],
    [1_100, 'start'],
    [9_000, 'die', 137],
    [9_100, 'start'],
    [35_000, 'die', 1],
  ];
  for (const [atMs, action, exitCode] of deaths)
    truth.apply(
      { atMs, timeNano: BigInt(atMs) * 1_000_000n, containerId: CID, action, ...(exitCode === undefined ? {} : { exitCode }) },
      engine.inShutdown,
    );
  const c = containerLedger(service, truth, [], records, engine);
  return {
    containers: [c],
    imbalances: [],
    alerts: { openings: 0, alerted: 0, distinctKeys: 0, problems: [] },
    timers: [],
    audits: { audits: 0, checked: 0, skipped: 0, problems: [] },
    consistency: { checks: [{ name: 'SQLite integrity_check', checked: 1, problems: [] }] },
    truthProblems: [],
    keeperStopsOutsideCircuits: [],
    balanced: false,
  };
}

describe("the soak's ledger as one JSON object", () => {
  const faults = new FaultLog();
  faults.serviceFaults.push({ kind: 'oom', serviceId: 'svc-3', atMs: 8_500 });
  const o = { ...DEFAULTS, seed: 7 };

  it('lists a missed death with its container, time and the fault active then; and an extra record', () => {
    const s = summaryOf(o, ledgerOf([record(1, 1_000), record(2, 1_000)]), faults, [], 0);
    expect(s).toMatchObject({ seed: 7, crashes: { docker: 2, counted: 2, missed: 1, extra: 1 } });
    expect(s.crashes.missedDeaths).toEqual([
      {
        serviceId: 'svc-3',
        containerId: CID.slice(0, 12),
        at: new Date(9_000).toISOString(),
        exitCode: 137,
        activeFault: 'oom 0.5 s before',
      },
    ]);
    expect(s.crashes.extraRecords).toMatchObject([{ record: 2, seenBy: 'event', at: new Date(1_000).toISOString() }]);
  });

  it('lists a death no look could have seen apart, with the evidence that was gone, counted or not', () => {
    const uncounted = summaryOf(o, ledgerOf([record(1, 1_000), record(2, 9_000)]), faults, [], 0);
    expect(uncounted.crashes).toMatchObject({ docker: 2, counted: 2, missed: 0, extra: 0 });
    expect(uncounted.unobservable).toEqual([
      expect.objectContaining({
        class: 'shutdown-self',
        exitCode: 1,
        counted: false,
        missingEvidence: expect.stringMatching(/RestartCount/),
      }),
    ]);
    const counted = summaryOf(o, ledgerOf([record(1, 1_000), record(2, 9_000), record(3, 35_000)]), faults, [], 0);
    expect(counted.crashes).toMatchObject({ counted: 3, missed: 0, extra: 0 });
    expect(counted.unobservable[0].counted).toBe(true);
  });
});

describe("the worker's memory over a run", () => {
  const MIN = 60_000;
  const sample = (min: number, pid: number | undefined, rssMb?: number): UsageSample => ({
    atMs: min * MIN,
    pid,
    rssMb,
    cpuPercent: undefined,
  });

  it('compares the end with minute 10 of the run, and with minute 10 of the last worker, counting the restarts between', () => {
    const samples = [
      sample(0, 1, 150),
      sample(10, 1, 200),
      sample(20, 1, 230),
      sample(21, undefined), // killed
      sample(22, 2, 160),
      sample(32, 2, 190),
      sample(50, 2, 209),
    ];
    const d = rssDrift(samples, 0);
    expect(d.run).toMatchObject({ fromMb: 200, toMb: 209, restartsBetween: 1 });
    expect(d.run!.changePercent).toBeCloseTo(4.5, 1);
    expect(d.lastWorker).toMatchObject({ fromMb: 190, toMb: 209, restartsBetween: 0 });
    expect(d.lastWorker!.changePercent).toBeCloseTo(10, 1);
  });

  it('says nothing of a run, or a last worker, shorter than 10 minutes', () => {
    const d = rssDrift([sample(0, 1, 150), sample(9, 1, 160), sample(12, 2, 150), sample(15, 2, 170)], 0);
    expect(d.run).toMatchObject({ fromMb: 150, toMb: 170, restartsBetween: 0 });
    expect(d.lastWorker).toBeUndefined();
    expect(rssDrift([sample(0, 1, 150), sample(5, 1, 160)], 0)).toEqual({ run: undefined, lastWorker: undefined });
  });
});
