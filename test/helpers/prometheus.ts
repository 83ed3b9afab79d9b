/**
 * A real Prometheus (Debian's 2.42, from scripts/provision-prometheus.sh) in a temp dir, and promtool. Tests
 * give it targets and rule files with short intervals and read it through its HTTP API. No vitest imports.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/temporal/dev-server';

export const ROOT = path.join(__dirname, '..', '..');
export const ALERT_RULES = path.join(ROOT, 'deploy', 'prometheus', 'keeper-alerts.yml');
export const ALERT_TESTS = path.join(ROOT, 'deploy', 'prometheus', 'keeper-alerts.test.yml');
export const DASHBOARD = path.join(ROOT, 'deploy', 'grafana', 'keeper.json');

export interface ToolResult {
  code: number | null;
  output: string;
}

/** Runs promtool with `input` on its stdin; stdout and stderr together, as an operator reads them. */
export function promtool(args: string[], input?: string): ToolResult {
  const r = spawnSync('promtool', args, { input, encoding: 'utf8', timeout: 60_000 });
  if (r.error) throw new Error(`promtool ${args[0]} could not run: ${r.error.message}`);
  return { code: r.status, output: `${r.stdout}${r.stderr}` };
}

export interface PrometheusOptions {
  /** host:port of each target, all in the job `keeper` (the name the alert rules expect). */
  targets: string[];
  ruleFiles: string[];
  intervalSeconds?: number;
}

export interface AlertInfo {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
  value: string;
}

export class Prometheus {
  private constructor(
    readonly url: string,
    private readonly child: ChildProcess,
    readonly dir: string,
    private log: { text: string },
  ) {}

  /** Starts it on a free loopback port and waits (bounded) until it answers ready. */
  static async start(opts: PrometheusOptions): Promise<Prometheus> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-prometheus-'));
    const config = path.join(dir, 'prometheus.yml');
    fs.writeFileSync(config, configText(opts));
    const port = await freePort();
    const child = spawn(
      'prometheus',
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const log = { text: '' };
    child.stdout?.on('data', (d) => (log.text += d));
    child.stderr?.on('data', (d) => (log.text += d));
    const prometheus = new Prometheus(`http://127.0.0.1:${port}`, child, dir, log);
    const deadline = Date.now() + 30_000;
    while (!(await prometheus.ready())) {
      if (child.exitCode !== null || Date.now() > deadline) {
        await prometheus.stop();
        throw new Error(`prometheus did not get ready on port ${port}: ${log.text.slice(-2000)}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    return prometheus;
  }

  get output(): string {
    return this.log.text;
  }

  private async ready(): Promise<boolean> {
    return fetch(`${this.url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
  }

  /** GET /api/v1/<endpoint>: the `data` of a successful answer; an error answer throws with Prometheus's words. */
  async api<T>(endpoint: string, params: Record<string, string> = {}): Promise<T> {
    const res = await fetch(`${this.url}/api/v1/${endpoint}?${new URLSearchParams(params)}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${endpoint} ${JSON.stringify(params)}: ${body.error}`);
    return body.data;
  }

  /** An instant query's samples, each as its labels and its value as a number. */
  async query(expr: string): Promise<{ metric: Record<string, string>; value: number }[]> {
    const data = await this.api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>('query', { query: expr });
    return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  }

  async targets(): Promise<{ health: string; lastError: string; scrapeUrl: string; labels: Record<string, string> }[]> {
    return (await this.api<{ activeTargets: never[] }>('targets')).activeTargets;
  }

  async alerts(): Promise<AlertInfo[]> {
    return (await this.api<{ alerts: AlertInfo[] }>('alerts')).alerts;
  }

  /** SIGTERM, then SIGKILL if it has not exited within 10 s; then its temp dir goes. Safe to call twice. */
  async stop(): Promise<void> {
    await stopProcess(this.child, 10_000);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

function configText(opts: PrometheusOptions): string {
  const every = `${opts.intervalSeconds ?? 1}s`;
  return [
    'global:',
    `  scrape_interval: ${every}`,
    `  evaluation_interval: ${every}`,
    'rule_files:',
    ...opts.ruleFiles.map((f) => `  - ${JSON.stringify(f)}`),
    'scrape_configs:',
    '  - job_name: keeper',
    '    static_configs:',
    `      - targets: ${JSON.stringify(opts.targets)}`,
    '',
  ].join('\n');
}

/** Ends a child this test started: SIGTERM, and SIGKILL after `graceMs`. Resolves once it has exited. */
export async function stopProcess(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
