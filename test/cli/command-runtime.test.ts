/**
 * A one-shot command's tenant runtime: the worker's, as it recorded it at its start, unless the command is given
 * --tenant-runtime. A development worker on an engine without gVisor falls back to runc; a `keeper service create`
 * or `keeper pool claim` beside it must create what the worker runs, not be refused for a runtime the engine lacks.
 * Real SQLite file; no engine or server is needed to decide it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openHost } from '../../src/app/open';
import type { StateDb } from '../../src/db/open';
import { recordWorkerStart } from '../../src/host/worker-config';
import { freshDb, testSettings } from '../helpers/fixtures';

let db: StateDb | undefined;
afterEach(() => db?.close());

describe("a command's tenant runtime", () => {
  it("is the one the host's worker recorded, unless the command was given --tenant-runtime", () => {
    db = freshDb().db;
    const configured = { ...testSettings(), tenantRuntime: 'runsc' };
    // What cmd-worker records after a dev host's fallback: runc.
    recordWorkerStart({ db, settings: { ...configured, tenantRuntime: 'runc' } }, 'embedded dev server', true);

    const command = (given: boolean) => openHost({ ...configured, tenantRuntimeGiven: given }, 'command', { db }).deps.settings;
    expect(command(false).tenantRuntime).toBe('runc');
    expect(command(true).tenantRuntime).toBe('runsc');
    // A worker is never told what it runs by a record: its own settings decide (and it records them).
    expect(openHost({ ...configured, tenantRuntimeGiven: false }, 'worker', { db }).deps.settings.tenantRuntime).toBe('runsc');
  });

  it('is the configured one where no worker has recorded its configuration', () => {
    db = freshDb().db;
    const configured = { ...testSettings(), tenantRuntime: 'runsc', tenantRuntimeGiven: false };
    expect(openHost(configured, 'command', { db }).deps.settings.tenantRuntime).toBe('runsc');
  });
});
