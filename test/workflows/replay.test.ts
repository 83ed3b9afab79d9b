/**
 * Replays every recorded history in test/fixtures/histories (recorded on the dev server with a real worker and
 * Docker by record.ts) against the current workflow bundle: a change that breaks determinism for runs in flight
 * fails here, before it reaches a host. Every workflow type that src/workflows/index.ts exports must have at
 * least one history, so a new workflow cannot ship without one. Needs the bundle only, no server.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import * as workflows from '../../src/workflows';
import { PATCHES } from '../../src/workflows/patches';
import { historyFromFixture } from '../helpers/history-fixture';
import { read } from '../helpers/repo-files';

const DIR = path.join(__dirname, '..', 'fixtures', 'histories');
const WORKFLOW_TYPES = Object.keys(workflows).sort();
/** Each patched workflow, and its patch: the histories must prove both the old and the new command sequence replay. */
const PATCHED = PATCHES.flatMap((p) => p.workflows.map((type) => [type, p.id] as [type: string, patch: string]));

const recorded = fs
  .readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((file) => {
    const history = historyFromFixture(JSON.parse(fs.readFileSync(path.join(DIR, file), 'utf8')));
    const type = history.events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? '';
    return { file, history, type };
  });

/** The patch ids a history's markers record (core's `core_patch` marker: JSON `{ id, deprecated }` in `patch-data`). */
function patchesOf(history: temporal.api.history.v1.History): string[] {
  return history.events.flatMap((e) => {
    const m = e.markerRecordedEventAttributes;
    const data = m?.markerName === 'core_patch' ? m.details?.['patch-data']?.payloads?.[0]?.data : undefined;
    return data ? [(JSON.parse(Buffer.from(data).toString('utf8')) as { id: string }).id] : [];
  });
}

describe('replay of recorded histories', () => {
  it('finds the workflow types in the bundle entry point', () => {
    expect(WORKFLOW_TYPES.length).toBeGreaterThan(0);
  });

  it.each(WORKFLOW_TYPES)('has a recorded history of %s', (type) => {
    expect(recorded.filter((r) => r.type === type).map((r) => r.file)).not.toEqual([]);
  });

  it.each(PATCHED)('has %s histories recorded with and without the %s patch', (type, patch) => {
    const withPatch = recorded.filter((r) => r.type === type).map((r) => patchesOf(r.history).includes(patch));
    expect(new Set(withPatch)).toEqual(new Set([true, false]));
  });

  it('records no patch that src/workflows/patches.ts does not list', () => {
    const listed = new Set(PATCHED.map(([type, patch]) => `${type} ${patch}`));
    const unlisted = recorded.flatMap((r) => patchesOf(r.history).map((p) => `${r.type} ${p}`)).filter((p) => !listed.has(p));
    expect(unlisted).toEqual([]);
  });

  it("lists every patch in docs/upgrade.md's table, with its workflows", () => {
    const rows = [...read('docs/upgrade.md').matchAll(/^\| `(\w+)` \| `([\w-]+)` \|$/gm)].map((m) => `${m[1]} ${m[2]}`);
    expect(rows.sort()).toEqual(PATCHED.map(([type, patch]) => `${type} ${patch}`).sort());
  });

  it.each(recorded.map((r) => [r.file, r] as const))('%s replays deterministically', async (_file, { file, history }) => {
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, file.replace(/\.json$/, '')),
    ).resolves.toBeUndefined();
  });
});
