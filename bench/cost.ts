/**
 * `npm run bench:cost`: what one keeper host costs on its Temporal cluster, where an operator pays per action and
 * per stored byte. One host at the default settings (the loops' schedules every 1 h, 6 h and 6 h, their looks every
 * 10 s, 15 s and 1 min, the event watcher on) on the CLI's dev server, whose `action` counter meters actions as
 * Temporal Cloud bills them (local activities included, as `BatchMarkers`). Two cases, each on a fresh server and host:
 * - idle: 20 healthy services (keeper-test/web) and a full warm pool (the default templates, their images tagged
 *   from the test image);
 * - busy: the same, plus one crash-looping service (keeper-test/crashloop), created when the window opens, so the
 *   window holds its crashes, the circuit opening and its workflow;
 * - crash: the idle host, one healthy service's container SIGKILLed every --crash-every (Docker restarts it), a
 *   different service each time: what one crash costs (the `events` row: the watcher's reconcileOnEvents runs).
 * The window opens once each loop has completed a run (GC's first waits --gc-first-delay, 2 min, then for its
 * 5-min interval's next mark) and the pool is full. Per case and loop it prints actions a day (by type), history
 * bytes a day (the runs started in the window, each one's history size from DescribeWorkflowExecution, plus the
 * growth of each schedule's own workflow), the dev server DB's growth (its file and -wal), the events that weigh
 * most in a run's history, and the monthly cost at the given list prices.
 *
 *   usage: DOCKER_HOST=$(bash scripts/extra-dockerd.sh start cost-bench) npm run bench:cost [-- --window 10m --cases idle,busy,crash
 *          --crash-every 60s
 *          --price-per-million-actions 50 --price-per-gb-month 0.77 --retention-days 30]
 */
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { readyCounts } from '../src/db/pool';
import { readServices } from '../src/db/services';
import { DockerClient } from '../src/docker/client';
import { crashContainer } from '../test/helpers/crash';
import { loadSettings, parseDuration } from '../src/settings';
import { SCHEDULED_LOOPS } from '../src/loops/registry';
import { requestRun } from '../src/temporal/operations';
import { measureWindow, type CaseFigures } from './cost-window';
import {
  CRASHLOOP_IMAGE,
  createServices,
  onTeardown,
  provideTemplateImages,
  startCostHost,
  teardown,
  undoDepth,
  WEB_IMAGE,
  type CostHost,
} from './cost-host';
import { arg, bundleOutOfProcess, requireExplicitEngine } from './host';
import { printCase, printSummary } from './cost-tables';

requireExplicitEngine('DOCKER_HOST=$(bash scripts/extra-dockerd.sh start cost-bench) npm run bench:cost');

export interface Options {
  windowMs: number;
  services: number;
  pricePerMillionActions: number;
  pricePerGbMonth: number;
  retentionDays: number;
  /** The crash case: one healthy service's container killed this often. */
  crashEveryMs: number;
  /** The schedules measured at this interval instead of their defaults (1 h, 6 h, 6 h), then scaled back to them. */
  loopIntervalMs?: number;
}

function options(): Options & { cases: string[] } {
  const num = (name: string, fallback: string) => {
    const v = Number(arg(name, fallback));
    if (!Number.isFinite(v) || v < 0) {
      process.stderr.write(`bench:cost: --${name} must be a non-negative number, got "${arg(name, fallback)}"\n`);
      process.exit(2);
    }
    return v;
  };
  const cases = arg('cases', 'idle,busy,crash').split(',');
  const unknown = cases.filter((c) => !CASES.includes(c as Case));
  if (unknown.length) {
    process.stderr.write(`bench:cost: unknown case "${unknown[0]}" in --cases; use some of idle,busy,crash\n`);
    process.exit(2);
  }
  return {
    cases,
    windowMs: parseDuration(arg('window', '10m')),
    crashEveryMs: parseDuration(arg('crash-every', '60s')),
    services: num('services', '20'),
    loopIntervalMs: arg('loop-interval', '') ? parseDuration(arg('loop-interval', '')) : undefined,
    pricePerMillionActions: num('price-per-million-actions', '50'),
    pricePerGbMonth: num('price-per-gb-month', '0.77'),
    retentionDays: num('retention-days', '30'),
  };
}

/**
 * Until every loop has completed a run, the pool is full, and the host is quiet: no run of it running, and longer
 * than a start's request (11 s) since the services started, so that their start requests do not fall in the window.
 */
async function settle(h: CostHost): Promise<void> {
  const startedAtMs = Date.now();
  const wanted = SCHEDULED_LOOPS.map((l) => l.schedule.workflowType);
  const poolTarget = Math.min(h.settings.poolMaxTotal, h.settings.poolSize * h.settings.pooledTemplates.length);
  let done = false;
  const check = async () => {
    const seen = new Set<string>();
    for await (const wf of h.client.workflow.list({ query: `KeeperHost="${h.settings.hostId}" AND ExecutionStatus="Completed"` }))
      seen.add(wf.type);
    const ready = Object.values(readyCounts(h.db)).reduce((a, b) => a + b, 0);
    const running = await h.client.workflow.count(`KeeperHost="${h.settings.hostId}" AND ExecutionStatus="Running"`);
    done = wanted.every((t) => seen.has(t)) && ready >= poolTarget && running.count === 0 && Date.now() - startedAtMs > 15_000;
  };
  // The schedules' intervals are aligned to the epoch: start-up requests a run of each loop now rather than waiting
  // for its first mark (the worker's start requested the pool's already; a second joins it).
  for (const { name } of SCHEDULED_LOOPS) await requestRun(h.client, h.settings.hostId, name);
  const deadline = Date.now() + 5 * 60_000;
  for (;;) {
    await check();
    if (done) return;
    if (Date.now() > deadline) throw new Error('start-up did not settle: some loop has not completed a run, or the pool is not full');
    await new Promise((r) => setTimeout(r, 2000));
  }
}

const CASES = ['idle', 'busy', 'crash'] as const;
type Case = (typeof CASES)[number];

/**
 * Kills one healthy service's container every `everyMs`, a different one each time (Docker's restart policy
 * brings it back), until stopped; returns how many it killed.
 */
function crashEvery(h: CostHost, everyMs: number): () => number {
  const docker = new DockerClient();
  const running = readServices(h.db).filter((s) => s.status === 'running' && s.containerId);
  let kills = 0;
  const timer = setInterval(() => {
    const s = running[kills % running.length];
    kills++;
    crashContainer(docker, s.containerId!).catch((err) => process.stderr.write(`crash: ${(err as Error).message}\n`));
  }, everyMs);
  return () => (clearInterval(timer), kills);
}

async function runCase(kind: Case, o: Options, bundle: { codePath: string }): Promise<CaseFigures> {
  const mark = undoDepth();
  try {
    const h = await startCostHost(bundle, o.loopIntervalMs);
    const tagged = await provideTemplateImages(h);
    await createServices(h, o.services, WEB_IMAGE, 'web');
    process.stderr.write(
      `${kind}: host ${h.settings.hostId}, ${o.services} services, template images tagged: ${tagged.join(', ') || 'none'}; settling\n`,
    );
    const t = Date.now();
    await settle(h);
    process.stderr.write(`${kind}: settled in ${Math.round((Date.now() - t) / 1000)} s; measuring for ${o.windowMs / 1000} s\n`);
    let stopCrashing = () => 0;
    const figures = await measureWindow(h, kind, o, async () => {
      if (kind === 'busy') await createServices(h, 1, CRASHLOOP_IMAGE, 'crashloop');
      if (kind === 'crash') stopCrashing = crashEvery(h, o.crashEveryMs);
    });
    const kills = stopCrashing();
    if (kind === 'crash') figures.notes.push(perCrash(figures, kills));
    const defaults = loadSettings({}, {});
    figures.scale = Object.fromEntries(
      SCHEDULED_LOOPS.map(({ name, schedule }) => [name, h.settings[schedule.every] / defaults[schedule.every]]),
    );
    return figures;
  } finally {
    await teardown(mark);
  }
}

/** The event runs' actions per crash (each crash: its die's run, and the look once it is back up). */
function perCrash(f: CaseFigures, kills: number): string {
  const events = f.loops.get('events')!;
  const actions = [...events.actions.values()].reduce((a, b) => a + b, 0);
  const byType = [...events.actions.entries()].map(([k, v]) => `${k} ${v}`).join(', ');
  return `${kills} crashes; the event runs: ${events.runs} runs, ${actions} actions (${byType}): ${(actions / Math.max(1, kills)).toFixed(1)} actions per crash`;
}

async function main(): Promise<void> {
  const o = options();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-bench-cost-bundle-'));
  onTeardown(`remove ${dir}`, () => fs.rmSync(dir, { recursive: true, force: true }));
  const bundle = bundleOutOfProcess(dir);
  const all: CaseFigures[] = [];
  for (const kind of o.cases as Case[]) {
    const figures = await runCase(kind, o, bundle);
    all.push(figures);
    process.stdout.write(printCase(figures) + '\n\n');
  }
  process.stdout.write(printSummary(all, o) + '\n');
}

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`bench:cost: ${signal}: stopping what it started\n`);
    void teardown().finally(() => process.exit(130));
  });
}

main()
  .then(() => teardown())
  .catch(async (err) => {
    process.stderr.write(`bench:cost failed: ${(err as Error).stack ?? String(err)}\n`);
    await teardown();
    process.exit(1);
  });
