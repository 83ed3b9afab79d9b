/**
 * The soak's random schedule of faults, drawn from its seed: two streams side by side, one for the services (crash
 * loops, sparse crashes, exits with code 3, health failures, OOM kills under a memory limit) and one for the host (one fault at a time: the worker
 * SIGKILLed, dockerd restarted, the engine wedged, the Temporal server SIGKILLed, SQLite's write lock held by
 * another process, keeper's event stream held open and silent). Each stream draws from its own generator, so the
 * host's schedule does not shift with the services'. The draws are the seed's; which service a draw lands on also
 * depends on which services are idle at that moment (not in a crash loop, not sick, circuit closed).
 */
import { rng, type Rng } from '../../test/helpers/rng';
import { holdWriteLock } from '../../test/helpers/sqlite-lock';
import { restartDockerd } from './engine';
import type { OpeningWatch } from './openings';
import type { HostFault, ServiceFault, SoakOptions } from './options';
import type { Rig } from './rig';
import { rebaselineFromEngine, type BlindWindow, type ShutdownWindow } from './truth';
import { isSick, mainPid, makeSick, readLoop, setLoop, soakDocker, type SoakService } from './services';

/** What was injected, by kind, and when each host fault ran: the report's counts. */
export class FaultLog {
  readonly counts = new Map<string, number>();
  readonly skipped = new Map<string, number>();
  readonly hostFaults: { kind: HostFault; fromMs: number; toMs: number; detail: string }[] = [];
  /** Each service fault injected, and when: the ledger names the fault behind a death it lists. */
  readonly serviceFaults: { kind: ServiceFault; serviceId: string; atMs: number }[] = [];
  readonly errors: string[] = [];

  count(kind: string): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
  }

  injected(kind: ServiceFault, serviceId: string): void {
    this.serviceFaults.push({ kind, serviceId, atMs: Date.now() });
    this.count(kind);
  }

  /** The host faults' windows in which keeper could not look (ledger.ts: a death in them before a shutdown is unobservable). */
  blindWindows(): BlindWindow[] {
    return this.hostFaults.filter((h) => BLINDING.has(h.kind)).map(({ fromMs, toMs }) => ({ fromMs, toMs }));
  }

  /** The faults active at `atMs` for `serviceId`: its last service fault before it, and a host fault under way then. */
  activeAt(serviceId: string, atMs: number): string {
    const own = this.serviceFaults.filter((f) => f.serviceId === serviceId && f.atMs <= atMs + 1000).pop();
    const host = this.hostFaults.find((h) => atMs >= h.fromMs - 1000 && atMs <= h.toMs + 5000);
    const ago = (f: { atMs: number }) => `${((atMs - f.atMs) / 1000).toFixed(1)} s before`;
    return [own && `${own.kind} ${ago(own)}`, host && `host fault ${host.kind}`].filter(Boolean).join(', ') || 'none';
  }

  skip(kind: string): void {
    this.skipped.set(kind, (this.skipped.get(kind) ?? 0) + 1);
  }
}

/**
 * Host faults during which keeper cannot see a death through to its record: its worker is down, the engine answers
 * nothing, Temporal cannot start the run, or the state DB cannot be written. A silent event stream is not one: the
 * looks go on.
 */
const BLINDING = new Set<HostFault>(['worker-kill', 'wedge', 'temporal-restart', 'sqlite-lock']);

/** How long each host fault lasts, drawn between these bounds (ms); dockerd's restart: its time down. */
const HOST_FAULT_LENGTHS_MS: Record<HostFault, [number, number]> = {
  'worker-kill': [1_000, 20_000],
  'temporal-restart': [1_000, 15_000],
  wedge: [5_000, 40_000],
  'silent-stream': [20_000, 90_000],
  'sqlite-lock': [2_000, 10_000],
  'dockerd-restart': [0, 5_000],
};

const SERVICE_WEIGHTS: [ServiceFault, number][] = [
  ['sparse-crash', 0.4],
  ['exit-3', 0.15],
  ['health-failure', 0.2],
  ['crash-loop', 0.15],
  ['oom', 0.1],
];

/** The signal that makes a service's process die as `kind` says (services.ts), for the faults made by a signal. */
const SIGNAL_OF: Record<'sparse-crash' | 'exit-3' | 'oom', NodeJS.Signals> = {
  'sparse-crash': 'SIGKILL',
  'exit-3': 'SIGUSR1',
  oom: 'SIGHUP',
};

/** An exponential gap with mean `meanMs`, so faults come as a Poisson process: bunched sometimes, sparse others. */
const gap = (r: Rng, meanMs: number) => Math.min(meanMs * 6, -Math.log(1 - r.next()) * meanMs);
const sleep = (msValue: number) => new Promise((resolve) => setTimeout(resolve, msValue));

/** A length between loMs and hiMs, placed by a draw in [0, 1). */
const span = (draw: number, loMs: number, hiMs: number) => loMs + Math.floor(draw * (hiMs - loMs));

function weighted<T>(r: Rng, items: [T, number][]): T {
  let x = r.next() * items.reduce((n, [, w]) => n + w, 0);
  for (const [item, w] of items) if ((x -= w) < 0) return item;
  return items[items.length - 1][0];
}

export class FaultSchedule {
  readonly log = new FaultLog();
  private readonly serviceRng: Rng;
  private readonly hostRng: Rng;
  /** Set while dockerd is down or starting: the services' faults wait (they need the engine). */
  private engineDown = false;
  /** Services the schedule put in a crash loop, until their loop is spent and they ran again. */
  private readonly busyUntil = new Map<string, number>();
  /** Stops both streams' waits at once, and cuts short a host fault's hold (what it broke is mended at once). */
  private readonly stopped = new AbortController();
  private hostFaultUnderWay = false;
  private lastHostFaultEndMs = Date.now();

  constructor(
    private readonly rig: Rig,
    private readonly openings: OpeningWatch,
    private readonly o: SoakOptions,
    private readonly say: (line: string) => void,
  ) {
    this.serviceRng = rng(o.seed);
    this.hostRng = rng(o.seed ^ 0x9e3779b9);
  }

  /** Runs both streams until `untilMs` (or `stop`); a host fault under way is finished, so nothing is left broken. */
  async run(untilMs: number): Promise<void> {
    await Promise.all([this.serviceStream(untilMs), this.hostStream(untilMs)]);
  }

  stop(): void {
    this.stopped.abort();
  }

  /** Since when no host fault has been under way; undefined while one is. */
  quietSinceMs(): number | undefined {
    return this.hostFaultUnderWay ? undefined : this.lastHostFaultEndMs;
  }

  /** Waits `msValue` (not past `untilMs`); whether the stream goes on. */
  private async pause(msValue: number, untilMs: number): Promise<boolean> {
    await this.sleep(Math.min(msValue, untilMs - Date.now()));
    return !this.stopped.signal.aborted && Date.now() < untilMs;
  }

  /** A wait that ends early when the schedule stops. */
  private sleep(msValue: number): Promise<void> {
    const signal = this.stopped.signal;
    if (msValue <= 0 || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => (clearTimeout(t), signal.removeEventListener('abort', done), resolve());
      const t = setTimeout(done, msValue);
      signal.addEventListener('abort', done);
    });
  }

  private async serviceStream(untilMs: number): Promise<void> {
    while (await this.pause(gap(this.serviceRng, this.o.serviceFaultEveryMs), untilMs)) {
      const kind = weighted(this.serviceRng, SERVICE_WEIGHTS);
      const draw = this.serviceRng.next();
      const extra = this.serviceRng.next();
      if (this.engineDown) {
        this.log.skip(`${kind} (engine down)`);
        continue;
      }
      try {
        await this.serviceFault(kind, draw, extra);
      } catch (err) {
        this.log.errors.push(`${kind}: ${(err as Error).message.split('\n')[0]}`);
      }
    }
  }

  /** Whether a service can take a fault now: running, circuit closed, not looping, not sick. */
  private idle(s: SoakService, now: number): boolean {
    return !this.openings.isOpen(s.serviceId) && (this.busyUntil.get(s.serviceId) ?? 0) < now && readLoop(s) === 0 && !isSick(s);
  }

  /** The first idle service at or after the drawn position among `candidates`. */
  private pick(candidates: SoakService[], draw: number): SoakService | undefined {
    const now = Date.now();
    const start = Math.floor(draw * candidates.length);
    for (let k = 0; k < candidates.length; k++) {
      const s = candidates[(start + k) % candidates.length];
      if (this.idle(s, now)) return s;
    }
    return undefined;
  }

  private async serviceFault(kind: ServiceFault, draw: number, extra: number): Promise<void> {
    const all = this.rig.services;
    const candidates =
      kind === 'health-failure'
        ? all.filter((s) => s.health)
        : kind === 'oom'
          ? all.filter((s) => s.oom)
          : kind === 'exit-3'
            ? all.filter((s) => (extra < 0.5 ? s.expectedExitCodes.includes(3) : !s.expectedExitCodes.includes(3)))
            : all;
    const looping = all.filter((s) => readLoop(s) > 0).length;
    const s = kind === 'crash-loop' && looping >= Math.max(2, all.length / 20) ? undefined : this.pick(candidates, draw);
    if (!s) return this.log.skip(`${kind} (no idle service)`);
    // A loop's K more deaths after its first: at most the threshold and a few, so loops that open a circuit and some that do not.
    await this.injectService(kind, s, 1 + Math.floor(extra * (this.o.keeper.crashThreshold + 4)));
  }

  /**
   * Service `s` dies as `kind` says (a crash loop: `loopDeaths` more deaths after the first); whether it did (false:
   * its container was not running, or died first, and the skip is logged).
   */
  async injectService(kind: ServiceFault, s: SoakService, loopDeaths = 0): Promise<boolean> {
    if (kind === 'health-failure') {
      makeSick(s);
      this.log.injected(kind, s.serviceId);
      return true;
    }
    const pid = await mainPid(this.rig.docker, s.containerId);
    if (pid === undefined) return (this.log.skip(`${kind} (container not running)`), false);
    const signal = (name: NodeJS.Signals) => {
      try {
        process.kill(pid, name);
        return true;
      } catch {
        return false; // it died meanwhile
      }
    };
    if (kind === 'crash-loop') {
      setLoop(s, loopDeaths);
      this.busyUntil.set(s.serviceId, Date.now() + 30_000);
      if (!signal('SIGUSR2')) return (setLoop(s, 0), this.log.skip(`${kind} (container died first)`), false);
    } else if (!signal(SIGNAL_OF[kind])) {
      return (this.log.skip(`${kind} (container died first)`), false);
    }
    this.log.injected(kind, s.serviceId);
    return true;
  }

  private async hostStream(untilMs: number): Promise<void> {
    const kinds = this.o.hostFaults;
    if (kinds.length === 0) return;
    while (await this.pause(gap(this.hostRng, this.o.hostFaultEveryMs), untilMs)) {
      const kind = this.hostRng.pick(kinds);
      const [loMs, hiMs] = HOST_FAULT_LENGTHS_MS[kind];
      await this.injectHost(kind, span(this.hostRng.next(), loMs, hiMs)).catch(() => undefined);
    }
  }

  /**
   * Host fault `kind` for `forMs` (dockerd's restart: down that long between its exit and its start), logged with its
   * window; `during` runs while the fault is under way (after dockerd's restart: once the engine answers again).
   * Rejects when the fault could not be made (logged too).
   */
  async injectHost(kind: HostFault, forMs: number, during: () => Promise<unknown> = async () => undefined): Promise<string> {
    const fromMs = Date.now();
    this.hostFaultUnderWay = true;
    try {
      const detail = await this.hostFault(kind, forMs, during);
      this.log.hostFaults.push({ kind, fromMs, toMs: Date.now(), detail });
      this.log.count(kind);
      this.say(`host fault: ${kind}, ${detail}`);
      return detail;
    } catch (err) {
      this.log.errors.push(`${kind}: ${(err as Error).message.split('\n')[0]}`);
      this.say(`host fault ${kind} failed: ${(err as Error).message.split('\n')[0]}`);
      throw err;
    } finally {
      this.hostFaultUnderWay = false;
      this.lastHostFaultEndMs = Date.now();
    }
  }

  private async hostFault(kind: HostFault, forMs: number, during: () => Promise<unknown>): Promise<string> {
    const rig = this.rig;
    const secs = (msValue: number) => `${(msValue / 1000).toFixed(1)} s`;
    /** Something down for `forMs`, then up again; `during` in between. */
    const downFor = async (down: () => Promise<unknown> | unknown, up: () => Promise<unknown> | unknown) => {
      const whileDown = await down();
      await during();
      await this.sleep(forMs);
      await up();
      return whileDown;
    };
    switch (kind) {
      case 'worker-kill':
        await downFor(
          () => rig.worker.kill(),
          () => rig.worker.start(),
        );
        return `down ${secs(forMs)}`;
      case 'temporal-restart':
        await downFor(
          () => rig.temporal.kill(),
          () => rig.temporal.up(),
        );
        return `down ${secs(forMs)}`;
      case 'wedge': {
        let held = 0;
        const release = () => ((held = rig.proxy.heldRequests), rig.proxy.release());
        await downFor(() => rig.proxy.wedge(), release);
        return `${secs(forMs)}, ${held} requests held`;
      }
      case 'silent-stream': {
        const s = await downFor(
          () => rig.proxy.stallStreams({ alsoNew: true }),
          () => rig.proxy.restoreStreams(),
        );
        return `${secs(forMs)}, ${s} open streams stalled`;
      }
      case 'sqlite-lock': {
        const lock = holdWriteLock(rig.dbFile, forMs);
        await lock.locked();
        await during();
        await lock.done;
        if (lock.child.exitCode !== 0) throw new Error(`the lock holder exited ${lock.child.exitCode}`);
        return secs(forMs);
      }
      case 'dockerd-restart': {
        const detail = await this.restartEngine(forMs);
        await during();
        return detail;
      }
    }
  }

  /** dockerd restarted: its shutdown is a window of the truth's, and the truth is checked against RestartCount after. */
  private async restartEngine(downMs: number): Promise<string> {
    const rig = this.rig;
    this.engineDown = true;
    const window: ShutdownWindow = { fromMs: Date.now() };
    rig.witness.shutdowns.push(window);
    try {
      const restart = await restartDockerd(rig.engine, rig.starter, downMs, (atMs) => rig.witness.engineExited(atMs));
      window.backAtMs = restart.answeringAtMs;
      rig.docker = soakDocker(rig.engine.dockerHost);
      rig.witness.setDocker(rig.docker);
      await rig.witness.waitConnected(60_000);
      // What the engine's overflowed buffer did not replay (its starts, early deaths), from RestartCount.
      await sleep(3000);
      await rebaselineFromEngine(rig.docker, rig.witness, 2000);
      const secs = (a: number, b: number) => ((b - a) / 1000).toFixed(1);
      return `shutdown ${secs(restart.termAtMs, restart.exitedAtMs)} s, down ${secs(restart.exitedAtMs, restart.answeringAtMs)} s`;
    } finally {
      this.engineDown = false;
    }
  }
}
