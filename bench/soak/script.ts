/**
 * The soak's scripted schedule: each fault kind once, in a fixed order, and each death waited for (bounded) before
 * the next step, so that every run is the same run. It is what `npm test` runs (test/soak/scripted.test.ts); the
 * random schedule (faults.ts) is the bench, never a test.
 *
 * First dockerd's restart (every container stopped and started again by the engine, RestartCount back at 0), with a
 * service killed once the engine answers again. Then the services' faults, at once, each on a service of its kind:
 * a crash (SIGKILL), an expected exit (code 3 on a service whose label lists it), the same exit where the label does
 * not list it, an OOM kill under the memory limit, a failing health check, and a crash loop long enough to open the
 * circuit. Then the other host faults, one after the other, each with a service killed while it is under way: keeper
 * must still count that death exactly once, and the open circuit's timer must outlive them all.
 */
import { listCrashRecords } from '../../src/db/crash-records';
import { waitFor } from '../../test/helpers/fixtures';
import type { FaultSchedule } from './faults';
import type { OpeningWatch } from './openings';
import type { HostFault, SoakOptions } from './options';
import type { Rig } from './rig';
import { mainPid, type SoakService } from './services';

/** Services the script needs (with one in eight of each kind: health check, expected exit 3, memory limit). */
export const SCRIPTED_SERVICES = 16;

/**
 * The host faults in their order, how long each lasts, and the service killed while it is under way. dockerd's
 * restart comes first, before any other death: a death shortly before a shutdown may be unobservable (ledger.ts),
 * and the script's deaths must all be ones keeper has to count.
 */
const HOST_STEPS: { kind: HostFault; forMs: number; victim: number }[] = [
  { kind: 'worker-kill', forMs: 1_000, victim: 6 },
  { kind: 'sqlite-lock', forMs: 3_000, victim: 7 },
  { kind: 'wedge', forMs: 4_000, victim: 8 },
  { kind: 'silent-stream', forMs: 4_000, victim: 12 },
  { kind: 'temporal-restart', forMs: 2_000, victim: 13 },
];
const ENGINE_STEP = { kind: 'dockerd-restart', forMs: 0, victim: 14 } as const;

/** How long a step may take to be seen through: generous, for a busy machine. */
const STEP_BOUND_MS = 90_000;

export async function runScript(faults: FaultSchedule, rig: Rig, openings: OpeningWatch, o: SoakOptions): Promise<void> {
  if (rig.services.length < SCRIPTED_SERVICES)
    throw new Error(`the scripted soak needs ${SCRIPTED_SERVICES} services, got ${rig.services.length}`);
  const svc = (i: number) => rig.services[i];
  const recorded = (s: SoakService, n: number) =>
    waitFor(`${n} crash record(s) of ${s.serviceId}`, () => listCrashRecords(rig.db, s.serviceId, n).length >= n, STEP_BOUND_MS, 200);
  const made = (what: string) => (ok: boolean) => {
    if (!ok) throw new Error(`the scripted fault ${what} could not be made`);
  };
  const hostStep = async (step: { kind: HostFault; forMs: number; victim: number }) => {
    await faults.injectHost(step.kind, step.forMs, () => killWhenRunning(faults, rig, svc(step.victim)));
    return svc(step.victim);
  };
  // The engine's victim is waited for with the services' faults: keeper may find it only at its next look.
  const engineVictim = await hostStep(ENGINE_STEP);
  await Promise.all([
    faults.injectService('sparse-crash', svc(0)).then(made('sparse-crash')),
    faults.injectService('health-failure', svc(1)).then(made('health-failure')),
    faults.injectService('exit-3', svc(2)).then(made('exit-3 (expected)')),
    faults.injectService('oom', svc(3)).then(made('oom')),
    faults.injectService('exit-3', svc(4)).then(made('exit-3 (not expected)')),
    faults.injectService('crash-loop', svc(5), o.keeper.crashThreshold + 1).then(made('crash-loop')),
  ]);
  await Promise.all([
    recorded(engineVictim, 1),
    ...[0, 1, 2, 3, 4].map((i) => recorded(svc(i), 1)),
    waitFor(`the circuit of ${svc(5).serviceId} open`, () => openings.isOpen(svc(5).serviceId), STEP_BOUND_MS, 200),
  ]);
  for (const step of HOST_STEPS) await recorded(await hostStep(step), 1);
}

/** Kills `s` as the kernel would, once its container runs (after dockerd's restart, its policy starts it again). */
async function killWhenRunning(faults: FaultSchedule, rig: Rig, s: SoakService): Promise<void> {
  await waitFor(`${s.serviceId} running`, () => mainPid(rig.docker, s.containerId), STEP_BOUND_MS, 200);
  if (!(await faults.injectService('sparse-crash', s))) throw new Error(`the scripted crash of ${s.serviceId} could not be made`);
}
