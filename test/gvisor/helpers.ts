/**
 * An engine of a test file's own with gVisor's runsc registered, and what the gVisor tests read from it with the
 * docker CLI (not through keeper's adapter, whose answers are what they check).
 *
 * Networking: runsc with networking refuses to start on these machines ("cannot run with network enabled in
 * root network namespace": the sandbox denies /proc/1/ns/net), so the engine registers runsc with
 * `--network=none`. Docker still attaches such a container to its networks (endpoint, address, connect,
 * disconnect and rename all work), but inside the sandbox there is only loopback. The gVisor tests therefore
 * check runtimes, kernels and the pool's bookkeeping, never traffic (test/pool/claim.test.ts probes traffic
 * under runc on the main engine).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { tempDir } from '../helpers/fixtures';

/** gVisor's kernel version as its processes see it (uname -r), whatever the host runs. */
export const GVISOR_KERNEL = '4.4.0';

/** runsc as the tests register it: without networking (see above). `runsc-net` has it, and fails here. */
export const GVISOR_DAEMON_CONFIG = {
  runtimes: {
    runsc: { path: '/usr/bin/runsc', runtimeArgs: ['--network=none'] },
    'runsc-net': { path: '/usr/bin/runsc' },
  },
};

export interface GvisorEngine extends ExtraEngine {
  /** Stops the engine (runsc's gofer and sandbox processes with it) and removes its daemon config. */
  stop(): void;
}

/** Starts this run's engine `base` with GVISOR_DAEMON_CONFIG as its daemon.json. */
export function gvisorEngine(base: string): GvisorEngine {
  const dir = tempDir('keeper-gvisor-');
  const daemonConfig = path.join(dir, 'daemon.json');
  fs.writeFileSync(daemonConfig, JSON.stringify(GVISOR_DAEMON_CONFIG));
  try {
    const engine = extraEngine(base, { daemonConfig });
    return {
      ...engine,
      stop() {
        stopEngine(engine);
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** `docker` against `engine`, as an operator would run it; its stdout, trimmed. */
export function dockerCli(engine: Pick<ExtraEngine, 'dockerHost'>, ...args: string[]): string {
  return execFileSync('docker', ['-H', engine.dockerHost, ...args], { encoding: 'utf8', timeout: 60_000 }).trim();
}

/** HostConfig.Runtime of a container, as `docker inspect` reports it. */
export const runtimeOf = (engine: ExtraEngine, id: string) => dockerCli(engine, 'inspect', '-f', '{{.HostConfig.Runtime}}', id);

/** The kernel release a container's processes see. */
export const kernelSeenBy = (engine: ExtraEngine, id: string) => dockerCli(engine, 'exec', id, 'uname', '-r');

/** The network interfaces a container's processes see (from /proc/net/dev). */
export function interfacesSeenBy(engine: ExtraEngine, id: string): string[] {
  const lines = dockerCli(engine, 'exec', id, 'cat', '/proc/net/dev').split('\n').slice(2);
  return lines
    .map((l) => l.split(':')[0].trim())
    .filter(Boolean)
    .sort();
}

/** Processes whose command line names `dir` (an engine's dockerd, shims and runsc processes): pid and program. */
export function processesUnder(dir: string): { pid: number; program: string }[] {
  return fs
    .readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .flatMap((pid) => {
      try {
        const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return args.some((a) => a.includes(dir)) ? [{ pid: Number(pid), program: path.basename(args[0]) }] : [];
      } catch {
        return []; // exited meanwhile
      }
    });
}
