/**
 * The Temporal a one-shot command that edits a host's schedules and workflows (keeper uninstall) works on; app/
 * because it may start a dev server, which only the composition root does.
 */
import fs from 'node:fs';
import type { Settings } from '../settings';
import { resolveTemporalTarget } from '../temporal/connection';
import { embeddedServerAnswering, embeddedTemporalDbFile, resolveTemporalCli, startDevServer } from '../temporal/dev-server';

/**
 * The Temporal that holds this host's schedules and workflows. With none configured they live in the embedded
 * server's temporal.db, which runs only while `npm start` does: with the worker stopped (as uninstall wants it),
 * a headless dev server of this command's own serves that file on a free port until `stop`.
 */
export async function hostTemporal(settings: Settings): Promise<{ settings: Settings; stop(): Promise<void> }> {
  const target = resolveTemporalTarget(settings);
  const dbFile = embeddedTemporalDbFile(settings.db);
  const unneeded = target.address || !fs.existsSync(dbFile) || (await embeddedServerAnswering());
  if (unneeded) return { settings, stop: async () => undefined };
  const server = await startDevServer({ binary: resolveTemporalCli(settings.temporalCli), dbFile, namespace: target.namespace });
  return { settings: { ...settings, temporalAddress: server.address }, stop: () => server.stop() };
}
