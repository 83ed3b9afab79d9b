/**
 * The loops' schedules and what a host has of them on Temporal, from the registry: the backstop schedules a worker
 * creates (their settings read), `keeper schedules list`'s rows, and uninstall's view of a host's footprint.
 */
import type { Client } from '@temporalio/client';
import type { Settings } from '../settings';
import { hostFootprint, hostWorkflowTypes, type HostFootprint } from '../temporal/footprint';
import { describeSchedules, ensureSchedules, type LoopSchedule, type ScheduleRow } from '../temporal/schedules';
import { LOOPS, runTypes, SCHEDULED_LOOPS, type LoopName } from './registry';

/** The loops' backstop schedules at these settings (those of `names` only, when given). */
export function loopSchedules(settings: Settings, names?: readonly LoopName[]): LoopSchedule[] {
  return SCHEDULED_LOOPS.filter((l) => !names || names.includes(l.name)).map(({ name, schedule }) => ({
    loop: name,
    workflowType: schedule.workflowType,
    everyMs: settings[schedule.every],
    ...(schedule.firstDelay ? { firstDelayMs: settings[schedule.firstDelay] } : {}),
  }));
}

/** Creates or updates the host's loop schedules (of `names` only, when given), keeping a paused one paused. */
export function ensureLoopSchedules(client: Client, settings: Settings, names?: readonly LoopName[]): Promise<void> {
  return ensureSchedules(client, settings.hostId, loopSchedules(settings, names));
}

/** `keeper schedules list`: each scheduled loop's schedule, and its newest run however it started. */
export function describeLoopSchedules(client: Client, hostId: string): Promise<ScheduleRow[]> {
  return describeSchedules(
    client,
    hostId,
    SCHEDULED_LOOPS.map((l) => ({ loop: l.name, runTypes: runTypes(l) })),
  );
}

/** What a host id has on Temporal: its loops' schedules, and its running workflows. */
export function loopFootprint(client: Client, hostId: string): Promise<HostFootprint> {
  return hostFootprint(
    client,
    hostId,
    SCHEDULED_LOOPS.map((l) => l.name),
  );
}

/** A host's workflow types as uninstall treats them: every loop's runs, the health check's, circuits and alerts. */
export const HOST_WORKFLOW_TYPES = hostWorkflowTypes(LOOPS.flatMap(runTypes));
