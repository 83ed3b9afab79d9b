/** Real resources for tests: a fresh SQLite file, this suite's Docker engine, unique names, settings. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Dockerode from 'dockerode';
import { openStateDb, type StateDb } from '../../src/db/open';
import { dockerOptions } from '../../src/docker/client';
import type { ContainerSpec, Engine } from '../../src/docker/engine';
import { openHost } from '../../src/app/open';
import type { HostDeps } from '../../src/host/deps';
import { TestDockerClient } from './test-docker';
import { silentLogger } from '../../src/log';
import { loadSettings, type RawSettings, type Settings } from '../../src/settings';

export const TEST_IMAGE = 'keeper-test/busybox:latest';
/** Serves httpd on :8000 forever: a healthy service. */
export const WEB_IMAGE = 'keeper-test/web:latest';
/** Exits 1 two seconds after each start: a crash-looping service. */
export const CRASHLOOP_IMAGE = 'keeper-test/crashloop:latest';

/** The temp dirs this process made, removed after each test file (test/helpers/remove-temp-dirs.ts). */
const madeDirs: string[] = [];

/** Removes the temp dirs made so far; one still in use (a mount a failed test left) stays, for the host-safety report. */
export function removeTempDirs(): void {
  for (const dir of madeDirs.splice(0)) {
    try {
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      // left as it is
    }
  }
}

export function tempDir(prefix = 'keeper-test-', parent = os.tmpdir()): string {
  const dir = fs.mkdtempSync(path.join(parent, prefix));
  madeDirs.push(dir);
  return dir;
}

export function uniqueId(prefix = 't'): string {
  return `${prefix}${crypto.randomBytes(4).toString('hex')}`;
}

export function freshDb(dir = tempDir()): { db: StateDb; file: string } {
  const file = path.join(dir, 'state.db');
  return { db: openStateDb(file), file };
}

/**
 * The tenant runtime of tests on the suite's main engine, which has no gVisor registered (and keeper's tests
 * never change an engine they did not start). Named, so keeper's own default stays runsc: the gVisor tests
 * (test/gvisor/) run runsc on an engine of their own, and test/gvisor/refusal.test.ts shows the default refused here.
 */
export const TEST_TENANT_RUNTIME = 'runc';

export function testSettings(overrides: RawSettings = {}): Settings {
  return loadSettings({ hostId: uniqueId('host-'), db: ':unused:', tenantRuntime: TEST_TENANT_RUNTIME, ...overrides }, {});
}

/** A host's dependencies for calling host operations or activities directly: its log goes nowhere unless given. */
export function testDeps(parts: { db: StateDb; docker: Engine; settings: Settings } & Partial<HostDeps>): HostDeps {
  return openHost(parts.settings, 'command', { log: silentLogger, ...parts }).deps;
}

/**
 * Tracks what a test creates on the engine and removes it afterwards, so tests never see each other's leftovers.
 */
export class EngineFixture {
  readonly docker = new TestDockerClient();
  private containers = new Set<string>();
  private volumes = new Set<string>();
  private networks = new Set<string>();

  /** Creates (and starts) a container, on the engine's default bridge unless the spec names a network. */
  async run(spec: Partial<ContainerSpec> & { name: string }, start = true): Promise<string> {
    const id = await this.docker.createContainer({ image: TEST_IMAGE, cmd: ['sleep', '3600'], ...spec });
    this.containers.add(id);
    if (start) await this.docker.startContainer(id);
    return id;
  }

  trackContainer(id: string): void {
    this.containers.add(id);
  }

  async volume(name: string, labels: Record<string, string> = {}): Promise<string> {
    await this.docker.createVolume(name, labels);
    this.volumes.add(name);
    return name;
  }

  trackVolume(name: string): void {
    this.volumes.add(name);
  }

  async network(name: string): Promise<string> {
    const id = await this.docker.ensureNetwork(name);
    this.networks.add(name);
    return id;
  }

  trackNetwork(name: string): void {
    this.networks.add(name);
  }

  async cleanup(): Promise<void> {
    for (const id of this.containers) await this.docker.removeContainer(id, { force: true }).catch(() => undefined);
    for (const v of this.volumes) await this.docker.removeVolume(v).catch(() => undefined);
    for (const n of this.networks) await this.docker.removeNetwork(n).catch(() => undefined);
    this.containers.clear();
    this.volumes.clear();
    this.networks.clear();
  }
}

/** Polls `check` until it returns a truthy value, at most `timeoutMs`; never a fixed sleep. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 20_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
}

/**
 * The confinement fields of a container's HostConfig, read with dockerode directly: keeper's adapter has no
 * use for them, only the tests that check tenant containers are confined as ah confines them.
 */
export async function confinementOf(
  containerId: string,
): Promise<{ capDrop: string[]; securityOpt: string[]; pidsLimit: number; readonlyRootfs: boolean; tmpfs: string[] }> {
  const h = (await new Dockerode(dockerOptions(process.env.DOCKER_HOST)).getContainer(containerId).inspect())
    .HostConfig as Dockerode.HostConfig & { PidsLimit?: number; Tmpfs?: Record<string, string> };
  return {
    capDrop: h.CapDrop ?? [],
    securityOpt: h.SecurityOpt ?? [],
    pidsLimit: h.PidsLimit ?? 0,
    readonlyRootfs: h.ReadonlyRootfs === true,
    tmpfs: Object.keys(h.Tmpfs ?? {}).sort(),
  };
}

/** What ah's confinement of tenant containers looks like through confinementOf. */
export const AH_CONFINEMENT = {
  capDrop: ['ALL'],
  securityOpt: ['no-new-privileges'],
  pidsLimit: 256,
  tmpfs: ['/run', '/tmp', '/var/run', '/var/tmp'],
};
