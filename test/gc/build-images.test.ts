/**
 * ah's build images on a real engine of this file's own, with a real registry on its loopback (Debian's
 * docker-registry, in the engine's network namespace) so that an untagged build image keeps its registry digest
 * as on an ah host, where every build is pushed. A dry run first, then a real sweep that must remove exactly
 * what it listed: untagged build images, and tags beyond --build-images-per-service, never one a container uses,
 * a service row names, or no service owns. The engine, the registry and everything in them go in afterAll.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatSweep } from '../../src/cli/gc';
import { DockerClient } from '../../src/docker/client';
import type { StateDb } from '../../src/db/open';
import { taskQueueFor } from '../../src/ids';
import type { Settings } from '../../src/settings';
import type { GcSweepResult } from '../../src/contracts/gc';
import { gcSweep } from '../../src/workflows/gcSweep';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { freshDb, tempDir, TEST_IMAGE, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerForFile, keeperWorker } from '../helpers/temporal';
import * as w from './world';

const env = devServerForFile();
let engine: ExtraEngine | undefined;
let registry: ChildProcess | undefined;
const registryDir = tempDir('keeper-registry-');

/** The docker CLI on this file's engine. */
const dockerCli = (...args: string[]) =>
  execFileSync('docker', args, {
    encoding: 'utf8',
    env: { ...process.env, DOCKER_HOST: engine!.dockerHost },
    timeout: 60_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();
const inEngineNet = (...args: string[]) =>
  execFileSync('nsenter', [`--net=/run/netns/keeper-${engine!.name}`, ...args], { encoding: 'utf8', timeout: 10_000 });

beforeAll(async () => {
  engine = extraEngine('gcimg');
  fs.writeFileSync(
    path.join(registryDir, 'config.yml'),
    [
      'version: 0.1',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${registryDir}/data`,
      'http:',
      '  addr: 127.0.0.1:5000',
      'log:',
      '  level: error',
      '',
    ].join('\n'),
  );
  registry = spawn(
    'nsenter',
    [`--net=/run/netns/keeper-${engine.name}`, 'docker-registry', 'serve', path.join(registryDir, 'config.yml')],
    { stdio: 'ignore' },
  );
  await waitFor(
    "the registry on the engine's loopback",
    () => inEngineNet('curl', '-sf', 'http://127.0.0.1:5000/v2/') !== undefined,
    30_000,
    200,
  );
}, 180_000);

afterAll(async () => {
  if (registry?.pid) registry.kill('SIGTERM');
  if (engine) stopEngine(engine);
  fs.rmSync(registryDir, { recursive: true, force: true });
}, 300_000);

/** A new image of its own (a commit of the test image), tagged `ref`. Returns its id. */
function newImage(ref: string): string {
  const c = dockerCli('create', TEST_IMAGE, 'true');
  try {
    return dockerCli('commit', '-m', uniqueId('build-'), c, ref);
  } finally {
    dockerCli('rm', c);
  }
}

const exists = (ref: string) => {
  try {
    dockerCli('image', 'inspect', ref);
    return true;
  } catch {
    return false;
  }
};

describe("ah's build images", () => {
  let db: StateDb;
  let dry: GcSweepResult;
  let real: GcSweepResult;
  const img: Record<string, string> = {};
  let t = '';
  let s1 = '';
  let s2 = '';

  const sweep = async (settings: Settings, dryRun: boolean) => {
    const worker = await keeperWorker(env, { db, docker: new DockerClient(engine!.dockerHost), settings });
    return worker.runUntil(
      env.client.workflow.execute(gcSweep, { taskQueue: taskQueueFor(settings.hostId), workflowId: uniqueId('gc-'), args: [{ dryRun }] }),
    );
  };

  beforeAll(async () => {
    ({ db } = freshDb());
    t = w.tenant(db);
    const repo = (svc: string) => `127.0.0.1:5000/ah/${t}-${svc}`;
    s2 = w.service(db, t);
    // s1 built five times (b1 oldest); b1 is still used by a stopped container, its row runs b4
    s1 = w.service(db, t);
    const now = Math.floor(Date.now() / 1000);
    for (const [i, b] of ['b1', 'b2', 'b3', 'b4', 'b5'].entries()) {
      img[b] = newImage(`${repo(s1)}:${b}`);
      db.prepare(
        `INSERT INTO builds (id, service_id, tenant_id, status, source_type, image, created_at) VALUES (?, ?, ?, 'succeeded', 'git', ?, ?)`,
      ).run(uniqueId('bld'), s1, t, `${repo(s1)}:${b}`, now - 5000 + i * 100);
    }
    db.prepare('UPDATE services SET image = ? WHERE id = ?').run(`${repo(s1)}:b4`, s1);
    dockerCli('create', '--name', uniqueId('ah-old-'), `${repo(s1)}:b1`, 'true');
    // s2: one image under three tags, no builds rows (attributed by its repository); its row names c3
    img.c = newImage(`${repo(s2)}:c1`);
    dockerCli('tag', `${repo(s2)}:c1`, `${repo(s2)}:c2`);
    dockerCli('tag', `${repo(s2)}:c1`, `${repo(s2)}:c3`);
    db.prepare('UPDATE services SET image = ? WHERE id = ?').run(`${repo(s2)}:c3`, s2);
    // a build image of a service this DB does not know
    img.ghost = newImage(`${repo('ghost')}:g1`);
    // an untagged build image of s1: pushed, untagged, pulled back by digest (as a rebuilt or untagged one stays on an ah host)
    img.d = newImage(`${repo(s1)}:d1`);
    dockerCli('push', `${repo(s1)}:d1`);
    const digest = dockerCli('image', 'inspect', '-f', '{{index .RepoDigests 0}}', `${repo(s1)}:d1`);
    dockerCli('rmi', `${repo(s1)}:d1`);
    dockerCli('pull', digest);
    expect(dockerCli('images', '-q', '--no-trunc', '--filter', 'dangling=true')).toContain(img.d);

    const settings = testSettings({ gcMinAge: '0s', buildDir: tempDir(), buildImagesPerService: '2' });
    dry = await sweep(settings, true);
    real = await sweep(settings, false);
  }, 240_000);

  afterAll(() => db?.close());

  const buildClass = (r: GcSweepResult) => r.classes.find((c) => c.class === 'buildImages')!;
  const repoOf = (svc: string) => `127.0.0.1:5000/ah/${t}-${svc}`;

  it('removes the tags beyond the newest two per service and the untagged build image, as the dry run listed', () => {
    const removed = buildClass(real)
      .removed.map((i) => i.name)
      .sort();
    expect(removed).toEqual(
      [`${repoOf(s1)}:b2`, `${repoOf(s1)}:b3`, `${repoOf(s2)}:c1`, img.d.replace(/^sha256:/, '').slice(0, 12)].sort(),
    );
    expect(
      buildClass(dry)
        .planned.map((i) => i.name)
        .sort(),
    ).toEqual(removed);
    expect(buildClass(dry).removed).toEqual([]);
    expect(buildClass(real).failed).toEqual([]);
    expect(buildClass(real).removed.find((i) => i.name.endsWith(':b2'))!.reason).toBe(
      `build image over the limit of 2 per service for service ${s1}`,
    );
  });

  it('deletes an image with its last tag, only untags one with other tags, and keeps what it must', () => {
    expect(exists(img.b2) || exists(img.b3)).toBe(false);
    expect(exists(img.d)).toBe(false);
    expect(exists(`${repoOf(s2)}:c1`)).toBe(false);
    expect(exists(`${repoOf(s2)}:c2`) && exists(`${repoOf(s2)}:c3`) && exists(img.c)).toBe(true);
    for (const b of ['b1', 'b4', 'b5']) expect(exists(`${repoOf(s1)}:${b}`), b).toBe(true);
    expect(exists(`${repoOf('ghost')}:g1`)).toBe(true);
    expect(exists(TEST_IMAGE)).toBe(true);
    expect(buildClass(real).kept).toEqual({ 'image-in-use': 1, referenced: 2, 'within-limits': 2, unattributed: 1 });
  });

  it("keeper gc's output names the class and each removal", () => {
    const out = formatSweep(real);
    expect(out).toMatch(/^buildImages\s+4\s+0\s+0\s+.*unattributed 1/m);
    expect(out).toContain(`untagged build image of service ${s1}: used by no container`);
  });
});
