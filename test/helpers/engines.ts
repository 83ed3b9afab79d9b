/**
 * Extra Docker engines for tests that need a host of their own (multi-host, outages, GC isolation, gVisor).
 * Each runs in a network namespace of its own (scripts/extra-dockerd.sh), so it can never see or change the
 * host's interfaces, routes or iptables. Names carry this run's tag, so concurrent runs never share an engine;
 * global teardown stops every engine the run started, even when a test failed. No vitest imports: global setup
 * loads this module.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { RUN_TAG_VARIABLE } from './host-state';

export const EXTRA_DOCKERD = path.join(__dirname, '..', '..', 'scripts', 'extra-dockerd.sh');

export interface ExtraEngine {
  name: string;
  dockerHost: string;
  /** dockerd's pid file: fault tests signal the daemon through it. */
  pidFile: string;
}

/** The owner recorded with the engines of run `tag`; global teardown stops the engines of its owner. */
export const engineOwner = (tag: string) => `keeper-test-${tag}`;

/** Starts (or finds running) this run's engine `base`, optionally with a daemon.json (e.g. runtimes). */
export function extraEngine(base: string, opts: { daemonConfig?: string } = {}): ExtraEngine {
  const tag = process.env[RUN_TAG_VARIABLE];
  if (!tag) throw new Error(`${RUN_TAG_VARIABLE} is not set: extra engines are started by tests, under global setup`);
  const name = `${base}-${tag}`;
  const args = [EXTRA_DOCKERD, 'start', name, ...(opts.daemonConfig ? [opts.daemonConfig] : [])];
  const out = execFileSync('bash', args, {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, KEEPER_ENGINE_OWNER: engineOwner(tag) },
  });
  return { ...engineNamed(name), dockerHost: out.trim().split('\n').pop()! };
}

/** The pid of engine `engine`'s dockerd while that process lives; undefined once it has exited (or never wrote one). */
export function dockerdPid(engine: Pick<ExtraEngine, 'pidFile'>): number | undefined {
  try {
    const pid = Number(readFileSync(engine.pidFile, 'utf8').trim());
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/**
 * Stops engine `engine` (dockerd, containerd, shims and runtime processes such as runsc's gofer and sandbox,
 * all found by its run directory) and removes its namespace, data root and run directory.
 */
export function stopEngine(engine: Pick<ExtraEngine, 'name'>): void {
  execFileSync('bash', [EXTRA_DOCKERD, 'stop', engine.name], { stdio: 'inherit', timeout: 300_000 });
}

/** Stops every engine of `owner` and removes their namespaces, data roots and run directories. */
export function stopEnginesOf(owner: string): void {
  execFileSync('bash', [EXTRA_DOCKERD, 'stop-owned', owner], { stdio: 'inherit', timeout: 300_000 });
}

/** The extra engines on this machine, as the script lists them: name and owner. */
export function listedEngines(): { name: string; owner: string }[] {
  const listed = execFileSync('bash', [EXTRA_DOCKERD, 'list'], { encoding: 'utf8' });
  return listed
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [name, owner] = l.split(' ');
      return { name: name ?? '', owner: owner ?? '' };
    });
}

/** The owners of the extra engines on this machine. */
export function engineOwners(): string[] {
  return [...new Set(listedEngines().map((e) => e.owner))];
}

/** Engine `name` (full name, with its run's tag) where scripts/extra-dockerd.sh keeps it. */
export function engineNamed(name: string): ExtraEngine {
  const run = `/run/keeper-dockerd-${name}`;
  return { name, dockerHost: `unix://${run}/docker.sock`, pidFile: `${run}/docker.pid` };
}
