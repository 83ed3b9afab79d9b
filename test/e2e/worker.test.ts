/**
 * `npm start` as an operator runs it: `keeper worker` with no TEMPORAL_ADDRESS brings up the embedded dev
 * server (persistent, with its UI), ensures this host's schedules, prints a banner, serves metrics, and
 * on SIGTERM shuts down and stops the server it started.
 */
import net from 'node:net';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { EMBEDDED_TEMPORAL_PORT, EMBEDDED_UI_PORT } from '../../src/settings';
import { freePort } from '../../src/temporal/dev-server';
import { keeper as runKeeper, startKeeper } from '../helpers/cli';
import { embeddedPortsForFile } from '../helpers/embedded-ports';
import { tempDir, uniqueId, waitFor } from '../helpers/fixtures';

embeddedPortsForFile();

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => (s.end(), resolve(true)));
    s.on('error', () => resolve(false));
  });

async function countSchedules(hostId: string): Promise<number> {
  const connection = await Connection.connect({ address: `127.0.0.1:${EMBEDDED_TEMPORAL_PORT}` });
  try {
    let n = 0;
    for await (const s of new Client({ connection }).schedule.list()) if (s.scheduleId.startsWith(`keeper-${hostId}-`)) n++;
    return n;
  } finally {
    await connection.close();
  }
}

describe('keeper worker (npm start)', () => {
  it('runs on an embedded Temporal with its UI, and stops it again on SIGTERM; a restart does not duplicate schedules', async () => {
    expect(await portOpen(EMBEDDED_TEMPORAL_PORT)).toBe(false);
    const dir = tempDir();
    const hostId = uniqueId('w-');
    const metricsPort = await freePort();
    const args = [
      'worker',
      '--db',
      path.join(dir, 'state.db'),
      '--host-id',
      hostId,
      '--metrics-port',
      String(metricsPort),
      '--log-format',
      'pretty',
    ];

    for (const round of [1, 2]) {
      const keeper = startKeeper(args);
      try {
        await keeper.waitForOutput(/keeper is running[\s\S]*pool\s+next run/, 90_000);
        expect(keeper.output).toContain(`host        ${hostId} (task queue keeper-${hostId})`);
        expect(keeper.output).toContain('alerts      none (--notify-webhook): circuit events reach no one');
        expect(keeper.output).toContain(`UI          http://127.0.0.1:${EMBEDDED_UI_PORT}/namespaces/default/workflows?query=`);
        const ui = await waitFor('the UI', async () => (await fetch(`http://127.0.0.1:${EMBEDDED_UI_PORT}/`)).ok, 30_000);
        expect(ui).toBe(true);
        expect(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()).toMatch(/temporal_/);
        if (round === 1) {
          // One reconcile run, then keeper's own metrics are on the same endpoint.
          const trigger = await runKeeper(['schedules', 'trigger', 'reconcile', '--host-id', hostId]);
          expect(trigger.code, trigger.stderr).toBe(0);
          const metrics = await waitFor(
            'keeper metrics',
            async () => {
              const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
              return /temporal_workflow_completed_total\{[^}]*workflow_type="reconcileTick"/.test(text) ? text : undefined;
            },
            30_000,
          );
          expect(metrics).toMatch(/keeper_docker_api_calls_total\{[^}]*operation="container.list"/);
          expect(metrics).toMatch(new RegExp(`keeper_circuits_open\\{keeper_host="${hostId}"\\} 0`));
          expect(metrics).toMatch(/keeper_event_watcher_state\{state="following",keeper_host="[^"]+"\} 1/);
          // Each loop's newest run whatever started it, and each local look, as an operator reads them.
          const listed = await runKeeper(['schedules', 'list', '--json', '--host-id', hostId]);
          expect(listed.code, listed.stderr).toBe(0);
          const newest = (JSON.parse(listed.stdout) as { loop: string; newestRun: unknown }[]).find((r) => r.loop === 'reconcile');
          expect(newest?.newestRun).toMatchObject({
            type: expect.stringMatching(/^reconcile(Tick|OnEvents)$/),
            status: expect.any(String),
          });
          const looked = await waitFor(
            'a reconcile look in keeper status',
            async () => {
              const status = await runKeeper(['status', '--db', path.join(dir, 'state.db'), '--host-id', hostId]);
              return /^looks\n[\s\S]*^\s+reconcile\s+\d+ s ago\s+/m.test(status.stdout) ? status.stdout : undefined;
            },
            60_000,
            1_000,
          );
          expect(looked).toMatch(/^\s+loop\s+last look\s+found\s+last requested a run\s+failing$/m);
        }
        await waitFor('three schedules', async () => (await countSchedules(hostId)) === 3, 20_000);
        expect(await countSchedules(hostId)).toBe(3);
      } finally {
        keeper.child.kill('SIGTERM');
      }
      expect(await keeper.exited).toBe(0);
      expect(keeper.output).toMatch(/shutting down/);
      expect(await portOpen(EMBEDDED_TEMPORAL_PORT), `round ${round}: the dev server is stopped`).toBe(false);
    }
  });
});
