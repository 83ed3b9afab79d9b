/**
 * What a soak run is: its size, length, seed and pace, and the keeper settings it gives the worker. `npm run soak`
 * reads them from its flags (one-line errors, exit 2); the suite's short soak passes its own.
 */
import crypto from 'node:crypto';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import ms, { type StringValue } from 'ms';

/** The host-wide faults, each injected on its own (one at a time) between the services' faults. */
export const HOST_FAULTS = ['worker-kill', 'dockerd-restart', 'wedge', 'temporal-restart', 'sqlite-lock', 'silent-stream'] as const;
export type HostFault = (typeof HOST_FAULTS)[number];

/** The faults of one service, injected from the host as the kernel or the tenant's own code would. */
export const SERVICE_FAULTS = ['crash-loop', 'sparse-crash', 'exit-3', 'health-failure', 'oom'] as const;
export type ServiceFault = (typeof SERVICE_FAULTS)[number];

export interface KeeperTimings {
  /** --crash-window, --crash-threshold, --circuit-backoff, --escalation-decay: short, so circuits open and close in a run. */
  crashWindow: string;
  crashThreshold: number;
  circuitBackoff: string;
  escalationDecay: string;
  /** The backstop tick; events and the looks do the work. */
  reconcileInterval: string;
}

export interface SoakOptions {
  /**
   * `random`: faults drawn from the seed for `durationMs` (faults.ts; `npm run soak`, a bench). `scripted`: each
   * fault kind once, in a fixed order, each death waited for before the next (script.ts; what `npm test` runs).
   */
  schedule: 'random' | 'scripted';
  services: number;
  /** How long faults are injected; then the run settles and balances its ledger. */
  durationMs: number;
  seed: number;
  /** Mean time between two services' faults, and between two host faults (exponential gaps, from the seed). */
  serviceFaultEveryMs: number;
  hostFaultEveryMs: number;
  hostFaults: readonly HostFault[];
  /** The worker's RSS and CPU are read from /proc this often. */
  sampleEveryMs: number;
  /** The longest the run waits, once faults stop, for keeper to settle before it balances the ledger anyway. */
  settleBoundMs: number;
  /** Settled means, among other things, no container event for this long (Docker's restart backoff ran out). */
  settleQuietMs: number;
  keeper: KeeperTimings;
  /**
   * Services whose index is 1 modulo this carry a health check; those whose index is 2 modulo it
   * keeper.expected-exit-codes=3; those whose index is 3 modulo it a memory limit they can be made to exceed (OOM kills).
   */
  healthEvery: number;
  /** The health check's interval (and so how soon a sick service turns unhealthy). */
  healthCheckEveryMs: number;
  /** Keep the run's directory (state DB, Temporal DB, worker log) after it ends; it is kept anyway when the ledger fails. */
  keepDir: boolean;
  /** Print the ledger as one JSON object on stdout (the Markdown report goes to the run's directory only). */
  json: boolean;
}

export const DEFAULT_KEEPER: KeeperTimings = {
  crashWindow: '60s',
  crashThreshold: 5,
  circuitBackoff: '30s,1m,2m',
  escalationDecay: '4m',
  reconcileInterval: '15m',
};

export const DEFAULTS: Omit<SoakOptions, 'seed'> = {
  schedule: 'random',
  services: 200,
  durationMs: 5 * 60_000,
  serviceFaultEveryMs: 3_000,
  hostFaultEveryMs: 75_000,
  hostFaults: HOST_FAULTS,
  sampleEveryMs: 60_000,
  settleBoundMs: 8 * 60_000,
  settleQuietMs: 20_000,
  keeper: DEFAULT_KEEPER,
  healthEvery: 8,
  healthCheckEveryMs: 10_000,
  keepDir: false,
  json: false,
};

export const randomSeed = () => crypto.randomBytes(4).readUInt32BE(0);

function duration(flag: string) {
  return (raw: string): number => {
    const value = ms(raw as StringValue);
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
      throw new InvalidArgumentError(`${flag} must be a positive duration such as 90s, 5m or 1h, got "${raw}"`);
    return value;
  };
}

/** --minutes: a positive number of minutes (fractions allowed: 0.5 is 30 s), at most a day; in ms. */
function minutes(raw: string): number {
  const n = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || n <= 0 || n > 24 * 60)
    throw new InvalidArgumentError(`--minutes must be a number of minutes above 0 and at most 1440, such as 20 or 0.5, got "${raw}"`);
  return Math.round(n * 60_000);
}

function whole(flag: string, min: number, max: number) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || n < min || n > max)
      throw new InvalidArgumentError(`${flag} must be a whole number from ${min} to ${max}, got "${raw}"`);
    return n;
  };
}

function hostFaultList(raw: string): HostFault[] {
  const names = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(HOST_FAULTS as readonly string[]).includes(n));
  if (unknown.length > 0) throw new InvalidArgumentError(`--host-faults: unknown ${unknown.join(', ')}; known: ${HOST_FAULTS.join(', ')}`);
  return names as HostFault[];
}

/** The soak's flags; throws CommanderError (its message is the one line to print) on bad input. */
export function parseSoakArgs(argv: string[]): SoakOptions {
  const cmd = new Command('npm run soak --')
    .exitOverride()
    .configureOutput({ writeErr: () => undefined, writeOut: (s) => process.stdout.write(s) })
    .option('--services <n>', 'services on the soak engine', whole('--services', 1, 2000), DEFAULTS.services)
    .option('--minutes <n>', 'how long faults are injected, in minutes', minutes, DEFAULTS.durationMs)
    .option('--seed <n>', 'the seed of the fault schedule (printed, so a run can be replayed)', whole('--seed', 0, 2 ** 32 - 1))
    .option(
      '--service-fault-every <d>',
      "mean time between two services' faults",
      duration('--service-fault-every'),
      DEFAULTS.serviceFaultEveryMs,
    )
    .option('--host-fault-every <d>', 'mean time between two host faults', duration('--host-fault-every'), DEFAULTS.hostFaultEveryMs)
    .option('--host-faults <list>', `host faults to inject (default: all of ${HOST_FAULTS.join(',')})`, hostFaultList, [...HOST_FAULTS])
    .option('--sample-every <d>', "how often the worker's RSS and CPU are read", duration('--sample-every'), DEFAULTS.sampleEveryMs)
    .option(
      '--settle-bound <d>',
      'the longest wait for keeper to settle once faults stop',
      duration('--settle-bound'),
      DEFAULTS.settleBoundMs,
    )
    .option('--keep', "keep the run's directory (state DB, Temporal DB, worker log)", false)
    .option('--json', 'print the ledger as one JSON object on stdout instead of the Markdown report', false)
    .allowExcessArguments(false);
  cmd.parse(argv, { from: 'user' });
  const o = cmd.opts();
  return {
    ...DEFAULTS,
    services: o.services,
    durationMs: o.minutes,
    seed: o.seed ?? randomSeed(),
    serviceFaultEveryMs: o.serviceFaultEvery,
    hostFaultEveryMs: o.hostFaultEvery,
    hostFaults: o.hostFaults,
    sampleEveryMs: o.sampleEvery,
    settleBoundMs: o.settleBound,
    keepDir: o.keep,
    json: o.json,
  };
}

export { CommanderError };

/** The command that replays a run: what the report prints under its table. */
export function replayCommand(o: SoakOptions): string {
  if (o.schedule === 'scripted') return 'npx vitest run test/soak/scripted.test.ts';
  const flags = [`--services ${o.services}`, `--minutes ${+(o.durationMs / 60_000).toFixed(3)}`, `--seed ${o.seed}`];
  if (o.serviceFaultEveryMs !== DEFAULTS.serviceFaultEveryMs) flags.push(`--service-fault-every ${ms(o.serviceFaultEveryMs)}`);
  if (o.hostFaultEveryMs !== DEFAULTS.hostFaultEveryMs) flags.push(`--host-fault-every ${ms(o.hostFaultEveryMs)}`);
  if (o.hostFaults.length !== HOST_FAULTS.length) flags.push(`--host-faults ${o.hostFaults.join(',')}`);
  return `npm run soak -- ${flags.join(' ')}`;
}
