/**
 * The soak's services: one container each, made as ah makes a service's (name, labels, unless-stopped, no network),
 * with its row in the state DB (test/reconcile/rows.ts), and a control directory on the host, mounted at /ctl, through
 * which the soak drives what the tenant's process does without any call to the engine:
 *
 * - `loop`: a number K written there makes the process exit 1 (the soak sends SIGUSR2), and each of the next K
 *   starts exit 1 a second after starting, counting K down: a crash loop of K + 1 deaths that Docker's restart
 *   policy keeps restarting (with its backoff) until keeper opens the circuit and stops it, or K runs out;
 * - `sick`: its presence fails the health check of a service that has one (every `healthEvery`-th); every start
 *   removes it, so the restart keeper makes of an unhealthy container cures it;
 * - SIGUSR1 makes the process exit 3 (an expected exit for the services labelled keeper.expected-exit-codes=3),
 *   SIGTERM exit 143 (so that a stop takes no stop timeout), and SIGKILL from the host is a crash as the kernel's;
 * - SIGHUP makes the process read OOM_BYTES into a shell variable: under the memory limit of the services that have
 *   one (MEMORY_LIMIT_BYTES, no swap), the kernel's OOM killer ends it (exit 137, OOMKilled, the engine's `oom` event).
 */
import fs from 'node:fs';
import path from 'node:path';
import Dockerode from 'dockerode';
import type { StateDb } from '../../src/db/open';
import { dockerOptions } from '../../src/docker/client';
import { inBatches } from '../services';
import { addService, addTenant } from '../../test/reconcile/rows';

export const SOAK_TENANT = 'soak';
const IMAGE = 'keeper-test/busybox:latest';
/** The memory limit of the services that can be OOM-killed, and what SIGHUP makes their process hold: twice that. */
export const MEMORY_LIMIT_BYTES = 32 * 1024 * 1024;
const OOM_BYTES = 2 * MEMORY_LIMIT_BYTES;

/** The tenant's process; `wait` returns on a trapped signal, so the trap runs at once. */
export const SERVICE_SCRIPT = [
  'rm -f /ctl/sick',
  'read n < /ctl/loop',
  'if [ "${n:-0}" -gt 0 ]; then echo $((n - 1)) > /ctl/loop; sleep 1; exit 1; fi',
  "trap 'exit 3' USR1",
  "trap 'exit 1' USR2",
  `trap 'x=$(head -c ${OOM_BYTES} /dev/zero | tr "\\0" a)' HUP`,
  "trap 'exit 143' TERM",
  'sleep 2147483647 & wait',
].join('\n');

export interface SoakService {
  index: number;
  serviceId: string;
  containerId: string;
  ctlDir: string;
  health: boolean;
  /** Exit codes its keeper.expected-exit-codes label lists. */
  expectedExitCodes: number[];
  /** It has a memory limit, and SIGHUP makes it exceed it. */
  oom: boolean;
}

const serviceId = (i: number) => `svc-soak-${String(i).padStart(3, '0')}`;

/** Health checks on some, expected exit codes on others, a memory limit on others: which by index. */
function kindOf(i: number, healthEvery: number): { health: boolean; expected: boolean; oom: boolean } {
  return { health: i % healthEvery === 1, expected: i % healthEvery === 2, oom: i % healthEvery === 3 };
}

/** Makes `count` services: containers started, rows written as ah writes them. */
export async function makeServices(
  docker: Dockerode,
  db: StateDb,
  dir: string,
  count: number,
  health: { every: number; intervalMs: number },
): Promise<SoakService[]> {
  addTenant(db, SOAK_TENANT);
  const made: SoakService[] = [];
  await inBatches(
    Array.from({ length: count }, (_, i) => i),
    8,
    async (i) => {
      const sid = serviceId(i);
      const ctlDir = path.join(dir, 'ctl', sid);
      fs.mkdirSync(ctlDir, { recursive: true });
      fs.writeFileSync(path.join(ctlDir, 'loop'), '0\n');
      const kind = kindOf(i, health.every);
      const { expected, oom } = kind;
      const container = await docker.createContainer({
        name: `ah-${SOAK_TENANT}-${sid}`,
        Image: IMAGE,
        Cmd: ['sh', '-c', SERVICE_SCRIPT],
        Labels: {
          'ah.tenant': SOAK_TENANT,
          'ah.service': sid,
          'ah.managed': 'true',
          ...(expected ? { 'keeper.expected-exit-codes': '3' } : {}),
        },
        ...(kind.health && {
          Healthcheck: { Test: ['CMD', 'test', '!', '-e', '/ctl/sick'], Interval: health.intervalMs * 1e6, Timeout: 5e9, Retries: 1 },
        }),
        HostConfig: {
          RestartPolicy: { Name: 'unless-stopped' },
          NetworkMode: 'none',
          Binds: [`${ctlDir}:/ctl`],
          ...(oom && { Memory: MEMORY_LIMIT_BYTES, MemorySwap: MEMORY_LIMIT_BYTES }),
        },
      });
      await container.start();
      addService(db, SOAK_TENANT, { containerId: container.id }, sid);
      made.push({
        index: i,
        serviceId: sid,
        containerId: container.id,
        ctlDir,
        health: kind.health,
        expectedExitCodes: expected ? [3] : [],
        oom,
      });
    },
  );
  return made.sort((a, b) => a.index - b.index);
}

export function soakDocker(dockerHost: string): Dockerode {
  return new Dockerode(dockerOptions(dockerHost));
}

/** The container's main process on the host, when it runs: the soak signals it as the kernel or the tenant would. */
export async function mainPid(docker: Dockerode, containerId: string): Promise<number | undefined> {
  const s = (await docker.getContainer(containerId).inspect()).State;
  return s.Running && !s.Restarting && s.Pid > 0 ? s.Pid : undefined;
}

export function setLoop(s: SoakService, deaths: number): void {
  fs.writeFileSync(path.join(s.ctlDir, 'loop'), `${deaths}\n`);
}

/** The deaths the service's crash loop has still to die (0: none under way). */
export function readLoop(s: SoakService): number {
  const n = Number(fs.readFileSync(path.join(s.ctlDir, 'loop'), 'utf8').trim());
  return Number.isFinite(n) ? n : 0;
}

export function makeSick(s: SoakService): void {
  fs.writeFileSync(path.join(s.ctlDir, 'sick'), '');
}

export function isSick(s: SoakService): boolean {
  return fs.existsSync(path.join(s.ctlDir, 'sick'));
}
