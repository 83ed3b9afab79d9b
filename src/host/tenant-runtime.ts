/**
 * The runtime tenant containers run under (`--tenant-runtime`, default `runsc`). ah refuses to start unless its
 * engine has gVisor's runsc (VerifyGVisorRuntime) and creates every tenant container with it; keeper does the
 * same with the runtime it is configured with. The worker and every command that creates containers check it
 * before they do anything (src/worker.ts, src/cli/), so a host without the runtime gets one line that says what
 * to do instead of a refill that fails every minute. The engine itself refuses a create naming a runtime it
 * does not list, so no tenant container can fall back to the default runtime behind keeper's back.
 */
import type { Engine, EngineRuntimes } from '../docker/engine';
import { DockerError } from '../docker/errors';
import type { Logger } from '../log';
import { SettingsError, type Settings } from '../settings';

/** gVisor's runtime: what ah runs tenant code under. */
export const GVISOR_RUNTIME = 'runsc';
/** The engine's default runtime: tenant code on the host kernel. Allowed, but only when asked for by name. */
export const HOST_KERNEL_RUNTIME = 'runc';

/**
 * The configured runtime is not registered with the engine. A configuration problem (exit code 2, as a bad
 * setting): nothing transient, and retrying without changing the engine's or keeper's configuration never helps.
 */
export class TenantRuntimeMissing extends SettingsError {
  override name = 'TenantRuntimeMissing';
}

type RuntimeDeps = { docker: Pick<Engine, 'runtimes'>; settings: Pick<Settings, 'tenantRuntime' | 'tenantRuntimeGiven'> };

/** The one line that names the runtime, what the engine has, and the two ways out. */
export function missingRuntimeLine(runtime: string, engine: EngineRuntimes): string {
  const register =
    runtime === GVISOR_RUNTIME
      ? `install gVisor (Debian: apt-get install runsc) and register it with the engine ("runtimes": {"runsc": {"path": "/usr/bin/runsc"}} in daemon.json, then restart dockerd)`
      : `register ${runtime} with the engine ("runtimes" in daemon.json, then restart dockerd)`;
  return (
    `tenant runtime ${runtime} is not registered with the Docker engine (it lists ${engine.names.join(', ') || 'none'}): ` +
    `${register}, or pass --tenant-runtime ${HOST_KERNEL_RUNTIME} to run tenant code on the host kernel, with weaker isolation than ah's gVisor`
  );
}

/** Throws TenantRuntimeMissing unless the engine lists the configured runtime; engine errors propagate as they are. */
export async function assertTenantRuntime({ docker, settings }: RuntimeDeps): Promise<EngineRuntimes> {
  const engine = await docker.runtimes();
  if (!engine.names.includes(settings.tenantRuntime)) throw new TenantRuntimeMissing(missingRuntimeLine(settings.tenantRuntime, engine));
  return engine;
}

/** The runtime a worker runs tenant code under, how isolated that is, and why when it is not the configured one. */
export interface WorkerTenantRuntime {
  runtime: string;
  isolation: string;
  /** Set when a development host fell back from gVisor to runc: the reason, in an operator's words. */
  fallbackReason?: string;
  /** False when the engine did not answer at start (see workerTenantRuntime). */
  verified: boolean;
}

/**
 * The worker's choice at start. The configured runtime, when the engine lists it. A missing runtime stops the
 * worker (one line, exit code 2), except on a development host: with an embedded Temporal, and no runtime named by
 * flag or variable, a worker whose engine lacks gVisor runs tenant code under runc and says so in its banner, so
 * `npm start` works on any machine. A worker on a configured Temporal never falls back: it runs tenant code under
 * runc only when told to. An engine that does not answer does not stop the worker either: its DB-only
 * housekeeping and circuit timers must run through a Docker outage (W-10), and once the engine answers, it
 * refuses a create under a runtime it lacks ("Unknown runtime specified"), and the refill reports that.
 */
export async function workerTenantRuntime(deps: RuntimeDeps & { log: Logger; embeddedTemporal: boolean }): Promise<WorkerTenantRuntime> {
  const configured = deps.settings.tenantRuntime;
  let engine: EngineRuntimes;
  try {
    engine = await deps.docker.runtimes();
  } catch (err) {
    if (!(err instanceof DockerError)) throw err;
    deps.log.warn(
      'tenant runtime not verified: the Docker engine did not answer; creates name it and the engine refuses them if it lacks it',
      {
        tenantRuntime: configured,
        error: err.message,
      },
    );
    return { runtime: configured, isolation: isolationOf(configured), verified: false };
  }
  if (engine.names.includes(configured))
    return { runtime: configured, isolation: isolationOf(configured, engine.args[configured]), verified: true };
  const mayFallBack = deps.embeddedTemporal && !deps.settings.tenantRuntimeGiven && configured === GVISOR_RUNTIME;
  if (!mayFallBack || !engine.names.includes(HOST_KERNEL_RUNTIME)) throw new TenantRuntimeMissing(missingRuntimeLine(configured, engine));
  const fallbackReason =
    `this Docker engine does not list ${GVISOR_RUNTIME} (it lists ${engine.names.join(', ')}), and this is a development host ` +
    `(embedded Temporal, no --tenant-runtime given); keeper's provisioning registers gVisor only on an engine it starts itself, ` +
    `where gVisor can run. A worker on a configured Temporal refuses this.`;
  deps.log.warn('tenant code runs under runc: no gVisor on this engine', { tenantRuntime: HOST_KERNEL_RUNTIME, reason: fallbackReason });
  return { runtime: HOST_KERNEL_RUNTIME, isolation: isolationOf(HOST_KERNEL_RUNTIME), fallbackReason, verified: true };
}

/** How tenant code is isolated under `runtime`, in an operator's words. */
export function isolationOf(runtime: string, runtimeArgs: string[] = []): string {
  if (runtime === GVISOR_RUNTIME && runtimeArgs.includes('--network=none')) {
    return "gVisor: tenant code runs on gVisor's application kernel, as in ah, without networking (the engine runs runsc with --network=none: loopback only)";
  }
  if (runtime === GVISOR_RUNTIME) return "gVisor: tenant code runs on gVisor's application kernel, as in ah";
  if (runtime === HOST_KERNEL_RUNTIME) return "WEAKER than ah's: tenant code runs on the host kernel (runc), not under gVisor";
  return `not gVisor (ah runs tenant code under ${GVISOR_RUNTIME}): as isolated as ${runtime} makes it`;
}

export interface TenantRuntimeStatus {
  runtime: string;
  isolation: string;
  /** Whether the engine lists it; null when the engine did not answer. */
  registered: boolean | null;
}

/** For `keeper status`: the runtime in use, its isolation, and whether this engine has it. */
export async function tenantRuntimeStatus({ docker, settings }: RuntimeDeps): Promise<TenantRuntimeStatus> {
  const runtime = settings.tenantRuntime;
  const engine = await docker.runtimes().catch((err: unknown) => {
    if (err instanceof DockerError) return undefined;
    throw err;
  });
  return { runtime, isolation: isolationOf(runtime, engine?.args[runtime]), registered: engine ? engine.names.includes(runtime) : null };
}
