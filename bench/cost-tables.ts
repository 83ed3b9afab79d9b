/** bench:cost's markdown tables: per case and loop, the server's counter by action type, the heaviest events, and the summary. */
import os from 'node:os';
import { add, total, type Counts } from './cost-history';
import type { EventWeight } from './cost-history';
import { LOOP_ROWS, type CaseFigures, type LoopFigures } from './cost-window';

export interface Prices {
  pricePerMillionActions: number;
  pricePerGbMonth: number;
  retentionDays: number;
}

const DAYS_PER_MONTH = 30;
const perDay = (f: CaseFigures, n: number) => (n * 86_400_000) / f.windowMs;
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const kb = (bytes: number) => (bytes / 1000).toFixed(1);
const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
const median = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] : 0);
const sorted = (c: Counts) => [...c.entries()].sort((a, b) => b[1] - a[1]);

function merged(...cs: Counts[]): Counts {
  const out: Counts = new Map();
  for (const c of cs) for (const [k, v] of c) add(out, k, v);
  return out;
}

function historyActions(f: CaseFigures): number {
  let n = 0;
  for (const l of f.loops.values()) n += total(l.actions) + total(l.scheduleActions);
  return n;
}

/** Actions and history bytes of the window (from histories), each loop scaled to its default interval. */
function atDefaults(f: CaseFigures): { actions: number; bytes: number } {
  let actions = 0;
  let bytes = 0;
  for (const [name, l] of f.loops) {
    const k = f.scale?.[name] ?? 1;
    actions += (total(l.actions) + total(l.scheduleActions)) * k;
    bytes += (l.runBytes.reduce((a, b) => a + b, 0) + l.scheduleBytes) * k;
  }
  return { actions, bytes };
}

function historyBytes(f: CaseFigures): number {
  let n = 0;
  for (const l of f.loops.values()) n += l.runBytes.reduce((a, b) => a + b, 0) + l.scheduleBytes;
  return n;
}

function loopRow(f: CaseFigures, name: string, l: LoopFigures): string {
  const all = merged(l.actions, l.scheduleActions);
  const byType = sorted(all)
    .map(([k, v]) => `${k} ${int(perDay(f, v))}`)
    .join(', ');
  const runBytes = l.runBytes.reduce((a, b) => a + b, 0);
  return (
    `| ${name} | ${int(perDay(f, l.runs))} | ${int(perDay(f, total(all)))} | ${int(perDay(f, total(l.scheduleActions)))} | ` +
    `${mb(perDay(f, runBytes + l.scheduleBytes))} | ${mb(perDay(f, l.scheduleBytes))} | ${kb(median(l.runBytes))} / ${median(l.runEvents)} | ${byType || '-'} |`
  );
}

function loopTable(f: CaseFigures): string[] {
  const rows = LOOP_ROWS.map((name) => loopRow(f, name, f.loops.get(name)!));
  const metricTotal = total(f.metric);
  const unseen = metricTotal - historyActions(f);
  return [
    "| loop | runs/day | actions/day | of which its schedule's own | history MB/day | of which its schedule's own | KB / events per run (median) | actions/day by type |",
    '|---|---:|---:|---:|---:|---:|---:|---|',
    ...rows,
    `| not in a history (heartbeats, queries; runs across the window's edges) | | ${int(perDay(f, unseen))} | | | | | |`,
    `| **total (server's counter; histories)** | | **${int(perDay(f, metricTotal))}** | | **${mb(perDay(f, historyBytes(f)))}** | | | |`,
  ];
}

function metricTable(f: CaseFigures): string[] {
  return [
    "| action type (server's `action` counter) | in the window | per day |",
    '|---|---:|---:|',
    ...sorted(f.metric).map(([k, v]) => `| ${k} | ${int(v)} | ${int(perDay(f, v))} |`),
  ];
}

function weightRows(label: string, events: Map<string, EventWeight>, runs: number, top: number): string[] {
  const weights = [...events.entries()].sort((a, b) => b[1].bytes - a[1].bytes);
  const all = weights.reduce((a, [, w]) => a + w.bytes, 0);
  return weights
    .slice(0, top)
    .map(
      ([event, w]) =>
        `| ${label} | ${event} | ${(w.count / runs).toFixed(1)} | ${int(w.bytes / runs)} | ${((100 * w.bytes) / all).toFixed(0)} % |`,
    );
}

/**
 * Per loop, the events that weigh most (encoded size) in a run's history, averaged over its runs, and in its
 * schedule's workflow per run it started.
 */
function eventTable(f: CaseFigures, top = 6): string[] {
  const out = ['| history | event | per run | bytes per run | share of the bytes |', '|---|---|---:|---:|---:|'];
  for (const name of LOOP_ROWS) {
    const l = f.loops.get(name)!;
    if (l.runs === 0) continue;
    out.push(...weightRows(`${name} run`, l.events, l.runs, top));
    if (l.scheduleEvents.size) out.push(...weightRows(`${name} schedule`, l.scheduleEvents, l.runs, 3));
  }
  return out;
}

export function printCase(f: CaseFigures): string {
  return [
    `#### ${f.kind} host (${f.hostId}), window ${Math.round(f.windowMs / 1000)} s`,
    '',
    ...loopTable(f),
    '',
    ...metricTable(f),
    '',
    ...eventTable(f),
    ...(f.notes.length ? ['', ...f.notes.map((n) => `- ${n}`)] : []),
  ].join('\n');
}

function monthly(f: CaseFigures, p: Prices): { actions: number; storage: number } {
  const actions = (perDay(f, total(f.metric)) * DAYS_PER_MONTH * p.pricePerMillionActions) / 1e6;
  // Stored at steady state: a day's history times the days it is retained.
  const storage = ((perDay(f, historyBytes(f)) * p.retentionDays) / 1e9) * p.pricePerGbMonth;
  return { actions, storage };
}

export function printSummary(all: CaseFigures[], p: Prices): string {
  const money = (x: number) => `$${x.toFixed(2)}`;
  const scaled = all.some((f) => Object.values(f.scale ?? {}).some((k) => k !== 1));
  const rows = all.map((f) => {
    const m = monthly(f, p);
    const d = atDefaults(f);
    return (
      `| ${f.kind} | ${int(perDay(f, total(f.metric)))} | ${int(perDay(f, historyActions(f)))} | ${mb(perDay(f, historyBytes(f)))} | ` +
      `${mb(perDay(f, f.dbGrowthBytes))} | ${money(m.actions)} | ${money(m.storage)} | ${money(m.actions + m.storage)} |` +
      (scaled ? ` ${int(perDay(f, d.actions))} | ${mb(perDay(f, d.bytes))} |` : '')
    );
  });
  const extra = scaled ? ' actions/day at the default intervals | history MB/day at the default intervals |' : '';
  return [
    `one host at the default settings; ${DAYS_PER_MONTH}-day month; $${p.pricePerMillionActions} per million actions; ` +
      `$${p.pricePerGbMonth} per GB-month, history retained ${p.retentionDays} days; load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores`,
    '',
    "| case | actions/day (server's counter) | actions/day (from histories) | history MB/day (runs + schedules) | dev server DB growth MB/day | actions $/month | storage $/month | total $/month |" +
      extra,
    '|---|---:|---:|---:|---:|---:|---:|---:|' + (scaled ? '---:|---:|' : ''),
    ...rows,
  ].join('\n');
}
