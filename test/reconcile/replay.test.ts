/**
 * Replays real reconcileTick and circuitBreaker histories, recorded on the dev server
 * (test/fixtures/histories/record.ts), against the current workflow code: a change that breaks determinism for
 * running ticks or open circuits fails here, before it reaches a host with workflows in flight.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import { describe, expect, it } from 'vitest';
import { historyFromFixture } from './history-fixture';

const DIR = path.join(__dirname, '..', 'fixtures', 'histories');
const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.json')).sort();

describe('replay of recorded histories', () => {
  it('has histories of both workflows to replay', () => {
    expect(files).toEqual(expect.arrayContaining(['tick-quiet.json', 'tick-opens-circuit.json', 'tick-expired-circuit.json', 'circuit-reset.json', 'circuit-timer.json']));
  });

  it.each(files)('%s replays deterministically', async (file) => {
    const history = historyFromFixture(JSON.parse(fs.readFileSync(path.join(DIR, file), 'utf8')));
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, file.replace(/\.json$/, '')),
    ).resolves.toBeUndefined();
  });
});
