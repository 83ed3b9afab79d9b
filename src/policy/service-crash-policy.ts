/**
 * A service's own crash policy, from its container's labels: keeper.crash-threshold, keeper.crash-window,
 * keeper.circuit-backoff (the host's --crash-threshold, --crash-window and --circuit-backoff, same syntax) and
 * keeper.expected-exit-codes (exits that are recorded but never counted toward the circuit). A label that does
 * not parse falls back to the host's setting, with a one-line problem that names it: never ignored silently.
 * Pure; the labels come from the list or inspect the tick already makes, and the parsers from the caller
 * (settings.ts's crashSettingParsers), since workflow code may import policy/ but not settings.ts at run time.
 */
import ms from 'ms';
import type { crashSettingParsers } from '../settings';
import type { Condition, Unchecked } from './conditions';
import type { CrashPolicy, ServiceCrashRules } from '../contracts/reconcile';
import { quoted } from './rows';

export const CRASH_LABELS = {
  threshold: 'keeper.crash-threshold',
  window: 'keeper.crash-window',
  backoff: 'keeper.circuit-backoff',
  expectedExitCodes: 'keeper.expected-exit-codes',
} as const;

export interface ServiceCrashPolicy extends ServiceCrashRules {
  /** One line per bad label, naming it and the host's value used instead. */
  problems: string[];
}

const sec = (msValue: number) => Math.round(msValue / 1000);
const shownDuration = (s: number) => ms(s * 1000);

/** `0,143`: exit codes 0-255, comma-separated. */
export function parseExitCodes(raw: string): number[] {
  const items = raw.split(',').map((s) => s.trim());
  if (raw.trim() === '' || items.some((s) => !/^\d{1,3}$/.test(s) || Number(s) > 255)) {
    throw new Error(`"${raw}" is not a list of exit codes (0-255, comma-separated, e.g. 0,143)`);
  }
  return [...new Set(items.map(Number))];
}

/** The host's crash settings' parsers: a label takes the same syntax as its flag. */
export type CrashSettingParsers = typeof crashSettingParsers;

/** The service's rules: the host's policy with each valid label applied, and a problem for each bad one. */
export function serviceCrashPolicy(
  serviceId: string,
  labels: Record<string, string>,
  host: CrashPolicy,
  parsers: CrashSettingParsers,
): ServiceCrashPolicy {
  const problems: string[] = [];
  const read = <T>(label: string, parse: (raw: string) => T, fallback: T, shown: string): T => {
    const raw = labels[label];
    if (raw === undefined) return fallback;
    try {
      return parse(raw);
    } catch (err) {
      const why = (err as Error).message.replace(/^"[^"]*" /, '');
      problems.push(`service ${serviceId}: label ${label}=${quoted(raw, 40)} ${why}; using ${shown}`);
      return fallback;
    }
  };
  const policy: CrashPolicy = {
    ...host,
    threshold: read(CRASH_LABELS.threshold, parsers.crashThreshold, host.threshold, `the host's ${host.threshold}`),
    windowSec: read(
      CRASH_LABELS.window,
      (r) => sec(parsers.crashWindowMs(r)),
      host.windowSec,
      `the host's ${shownDuration(host.windowSec)}`,
    ),
    backoffSec: read(
      CRASH_LABELS.backoff,
      (r) => parsers.circuitBackoffMs(r).map(sec),
      host.backoffSec,
      `the host's ${host.backoffSec.map(shownDuration).join(',')}`,
    ),
  };
  const expectedExitCodes = read(CRASH_LABELS.expectedExitCodes, parseExitCodes, [], 'none: every exit counts');
  return { policy, expectedExitCodes, problems };
}

/** Whether a death's exit is one the service expects; a death with no known exit code never is. */
export function isExpectedExit(exitCode: number | null, expectedExitCodes: readonly number[]): boolean {
  return exitCode !== null && expectedExitCodes.includes(exitCode);
}

/** A service's bad labels as one condition, logged once when they appear or change (policy/conditions.ts). */
export function labelCondition(serviceId: string, problems: string[]): Condition | undefined {
  if (problems.length === 0) return undefined;
  return {
    subject: `labels:${serviceId}`,
    state: problems.join('; '),
    message: problems.join('; '),
    cleared: `service ${serviceId}: crash policy labels are valid again (or removed)`,
    summary: `service ${serviceId} has bad crash policy labels`,
  };
}

/**
 * A tick's label conditions, and what it did not look at: a service whose labels it did not read (its circuit
 * open, its container skipped on an engine error, the engine unreachable) keeps what was reported of it.
 */
export function labelConditions(
  problems: { serviceId: string; problems: string[] }[],
  checkedServiceIds: string[],
): { found: Condition[]; unchecked: Unchecked } {
  const checked = new Set(checkedServiceIds.map((id) => `labels:${id}`));
  const found = problems.map((p) => labelCondition(p.serviceId, p.problems)).filter((c): c is Condition => c !== undefined);
  return { found, unchecked: (subject) => !checked.has(subject) };
}
