/**
 * `npm run demo`: a throwaway host with one healthy and one crash-looping service on the test images, a real
 * keeper worker on the embedded Temporal, and a narrator that reads the state DB and says what happens:
 * crashes counted, the circuit opening, its retry time, where to look in the UI, and the recovery. It cleans up
 * on exit (Ctrl-C at any time). `--exit-after-open` (`node dist/demo.js --exit-after-open`) stops it once the circuit is open (for tests).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Keeper } from './app/keeper';
import type { StateDb } from './db/open';
import { readCircuit } from './db/services';
import type { HostDeps } from './host/deps';
import { createService, removeService } from './host/services';
import { assertTenantRuntime } from './host/tenant-runtime';
import { ids } from './ids';
import { tenantNetworkName } from './names';
import { EMBEDDED_UI_PORT, environment, loadSettings, type Settings } from './settings';
import { serviceRunsQuery } from './search-attributes';
import { isoSeconds } from './time';

const WEB_IMAGE = 'keeper-test/web:latest';
const CRASHLOOP_IMAGE = 'keeper-test/crashloop:latest';
const BIN = path.join(__dirname, '..', 'bin', 'keeper.js');

const say = (msg: string) => process.stdout.write(`[demo ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

async function main(): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-demo-'));
  const hostId = `demo-${process.pid}`;
  const dbFile = path.join(dir, 'state.db');
  // The demo's services are tenant containers: they run under KEEPER_TENANT_RUNTIME (default runsc, as keeper's),
  // so the demo reads the environment as every keeper command does, and sets only what makes it a demo.
  const settings = loadSettings({ db: dbFile, hostId, circuitBackoff: '1m,2m,4m' });
  const keeper = new Keeper(settings, 'worker'); // the demo's throwaway host: it creates its state DB
  const { deps } = keeper;
  const { db } = deps;
  await preflight(deps).catch(async (err) => (await keeper.close(), fs.rmSync(dir, { recursive: true, force: true }), Promise.reject(err)));
  say(`starting a keeper worker for host ${hostId} (state in ${dir}, worker log in ${dir}/worker.log)`);
  const worker = startWorker(dir, settings);
  const created: string[] = [];

  let cleaning = false;
  const cleanup = async (code: number) => {
    if (cleaning) return;
    cleaning = true;
    say('cleaning up: stopping the worker, removing the demo containers and files');
    worker.kill('SIGTERM');
    for (const id of created) await removeService(deps, id).catch(() => undefined);
    await deps.docker.removeNetwork(tenantNetworkName('demo')).catch(() => undefined);
    await keeper.close();
    await new Promise((r) => (worker.exitCode === null ? worker.once('exit', r) : r(null)));
    fs.rmSync(dir, { recursive: true, force: true });
    say('done');
    process.exit(code);
  };
  process.on('SIGINT', () => void cleanup(0));
  process.on('SIGTERM', () => void cleanup(0));

  try {
    await waitForWorker(dir);
    say(`the worker is up; the Temporal UI is at http://127.0.0.1:${EMBEDDED_UI_PORT}`);
    const web = await createService(deps, { tenant: 'demo', name: 'web', image: WEB_IMAGE });
    const flaky = await createService(deps, { tenant: 'demo', name: 'flaky', image: CRASHLOOP_IMAGE });
    created.push(web.id, flaky.id);
    say(`created service web (${web.id.slice(0, 8)}…, healthy) and flaky (${flaky.id.slice(0, 8)}…, exits every 2 s; Docker restarts it)`);
    say('keeper ticks every 5 s here (30 s by default) and counts every death, including the ones Docker already restarted');
    await narrate(db, hostId, flaky.id, `--db ${dbFile} --host-id ${hostId}`);
    await cleanup(0);
  } catch (err) {
    say(`failed: ${(err as Error).message}`);
    await cleanup(1);
  }
  return 0;
}

/** The demo's worker: a child process on the embedded dev server, ticking every 5 s, its pretty lines in dir/worker.log. */
function startWorker(dir: string, settings: Settings): ChildProcess {
  const flags = [
    '--db',
    settings.db,
    '--host-id',
    settings.hostId,
    '--reconcile-interval',
    '5s',
    '--circuit-backoff',
    '1m,2m,4m',
    '--metrics-port',
    '0',
    '--log-format',
    'pretty',
    '--tenant-runtime',
    settings.tenantRuntime,
  ];
  const log = fs.openSync(path.join(dir, 'worker.log'), 'a');
  return spawn(process.execPath, [BIN, 'worker', ...flags], { stdio: ['ignore', log, log], env: environment({ TEMPORAL_ADDRESS: '' }) });
}

/** What the demo needs before it starts a worker: the test images, and the tenant runtime on this engine. */
async function preflight(deps: HostDeps): Promise<void> {
  for (const image of [WEB_IMAGE, CRASHLOOP_IMAGE]) {
    if (!(await deps.docker.imageExists(image))) throw new Error(`image ${image} is missing: run scripts/provision-test-image.sh`);
  }
  // The worker would refuse with the same line, and the demo would only wait for it.
  await assertTenantRuntime(deps);
}

async function waitForWorker(dir: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (fs.readFileSync(path.join(dir, 'worker.log'), 'utf8').includes('keeper is running')) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('the worker did not start within 120 s; see its log');
}

/** Reads the flaky service's row twice a second and says what changed, until its circuit has recovered once. */
async function narrate(db: StateDb, hostId: string, serviceId: string, hostFlags: string): Promise<void> {
  const read = () => readCircuit(db, serviceId)!;
  const uiLink = `http://127.0.0.1:${EMBEDDED_UI_PORT}/namespaces/default/workflows?query=${encodeURIComponent(serviceRunsQuery(serviceId))}`;
  let last = read();
  let wasOpen = false;
  const deadline = Date.now() + 10 * 60_000;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 500));
    const now = read();
    if (now.crashCount !== last.crashCount && now.crashCount > 0)
      say(`flaky: ${now.crashCount} crash(es) counted in the window (threshold 5)`);
    if (now.open && !wasOpen) {
      wasOpen = true;
      const retry = isoSeconds(now.retryAt).slice(11, 19);
      say(
        `flaky: circuit OPEN (opening ${now.opening ?? '?'}, escalation ${now.escalation}); the container is stopped but kept, so its logs survive`,
      );
      say(`flaky: a durable timer will retry at ${retry} UTC; workflow ${ids.circuit(hostId, serviceId)}`);
      say(`look at it in the UI: ${uiLink} (open the run, see the timer in its history)`);
      say(`or close it now: npx keeper circuit reset ${serviceId} ${hostFlags}`);
      if (process.argv.includes('--exit-after-open')) return;
    }
    if (!now.open && wasOpen) {
      say(`flaky: circuit closed; status ${now.status}, crash count reset; it is back on probation (half-open)`);
      return;
    }
    last = now;
  }
  throw new Error('nothing happened within 10 minutes');
}

main().catch((err) => {
  process.stderr.write(`demo: ${(err as Error).message}\n`);
  process.exit(1);
});
