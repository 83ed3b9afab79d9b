/**
 * The Temporal UI as an operator uses it: the dev server's web UI, opened in headless Chromium (Debian's,
 * driven by playwright-core), lists this host's runs when filtered by the KeeperHost search attribute.
 * The screenshot it saves is the one the README shows.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { openStateDb, type StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { KeeperHost } from '../../src/search-attributes';
import { freePort, startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { createKeeperHost } from '../../src/app/keeper-host';
import type { CircuitState } from '../../src/contracts/circuit';
import { ids, taskQueueFor } from '../../src/ids';
import { tempDir, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { addService, addTenant, nowSec } from '../reconcile/rows';

const CHROMIUM = process.env.KEEPER_CHROMIUM ?? '/usr/bin/chromium';
// Written under test/.artifacts (git-ignored); docs/temporal-ui-keeper-host.png is a copy of one such run.
const SCREENSHOT = path.join(__dirname, '..', '.artifacts', 'temporal-ui-keeper-host.png');

/** Whether the page shows `text`: the UI renders user metadata as Markdown in frames of their own. */
async function shows(page: Page, text: string): Promise<boolean> {
  for (const frame of page.frames()) {
    const body = await frame
      .locator('body')
      .innerText({ timeout: 2_000 })
      .catch(() => '');
    if (body.replace(/\s+/g, ' ').includes(text)) return true;
  }
  return false;
}

describe('the Temporal UI', () => {
  let server: DevServer;
  let browser: Browser;
  let connection: Connection;
  let native: NativeConnection;
  let db: StateDb;
  const settings = testSettings({ hostId: 'ui-demo-host' });
  // A worker runs once (runUntil): each test has its own.
  const newWorker = (): Promise<Worker> =>
    createKeeperHost(settings, { db, docker: new DockerClient() }).createWorker({
      connection: native,
      namespace: 'default',
      workflowBundle: { codePath: inject('workflowBundlePath') },
    });

  beforeAll(async () => {
    server = await startDevServer({ uiPort: await freePort() });
    connection = await Connection.connect({ address: server.address });
    native = await NativeConnection.connect({ address: server.address });
    db = openStateDb(path.join(tempDir(), 'state.db'));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
  });

  // Every one is closed even when another refuses (a worker a failed test left running holds the connection):
  // the dev server above all, which would otherwise outlive the run.
  afterAll(async () => {
    const closing: (() => unknown)[] = [
      () => browser?.close(),
      () => connection?.close(),
      () => native?.close(),
      () => db?.close(),
      () => server?.stop(),
    ];
    const failed: unknown[] = [];
    for (const close of closing) {
      try {
        await close();
      } catch (err) {
        failed.push(err);
      }
    }
    if (failed.length > 0) throw new AggregateError(failed, 'closing the UI test');
  });

  it('finds a reconcileTick run filtered by KeeperHost', async () => {
    const client = new Client({ connection });
    const workflowId = `keeper-${settings.hostId}-reconcile-manual`;
    await (
      await newWorker()
    ).runUntil(
      client.workflow.execute('reconcileTick', {
        taskQueue: taskQueueFor(settings.hostId),
        workflowId,
        typedSearchAttributes: [{ key: KeeperHost, value: settings.hostId }],
      }),
    );
    const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
    const query = encodeURIComponent(`KeeperHost="${settings.hostId}"`);
    // The UI answers its first requests with an error page until its backend has settled; reload until the
    // filtered list shows the run (bounded).
    const found = await waitFor(
      'the run in the filtered workflow list',
      async () => {
        await page.goto(`${server.uiUrl}/namespaces/default/workflows?query=${query}`);
        await page.getByText(workflowId).first().waitFor({ timeout: 5_000 });
        return true;
      },
      60_000,
      500,
    ).catch(async (err) => {
      await page.screenshot({ path: SCREENSHOT + '.failed.png' });
      throw err;
    });
    expect(found).toBe(true);
    await page.getByText('reconcileTick').first().waitFor({ timeout: 10_000 });
    fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT });
    expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
  });

  it("shows on a circuit's page why it opened (its summary) and where it stands (its current details)", async () => {
    const client = new Client({ connection });
    const sid = uniqueId('svc');
    const retryAt = nowSec() + 1800;
    // An open circuit no workflow holds (as ah leaves one): the tick hands it to its workflow, with its summary.
    addService(db, addTenant(db), { status: 'crashed', crashCount: 5, circuitOpen: 1, circuitOpenCount: 1, circuitRetryAt: retryAt }, sid);
    const circuitId = ids.circuit(settings.hostId, sid);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await (
      await newWorker()
    ).runUntil(async () => {
      await client.workflow.execute('reconcileTick', {
        taskQueue: taskQueueFor(settings.hostId),
        workflowId: `keeper-${settings.hostId}-${sid}`,
      });
      const circuit = client.workflow.getHandle(circuitId);
      await waitFor('the circuit to hold its timer', async () => (await circuit.query<CircuitState>('state')).retryAt > 0);
      const until = new Date(retryAt * 1000).toISOString().replace('.000Z', 'Z');
      const summary = `${sid}: open circuit taken over (opening 1, escalation 1): opened earlier, by ah or by keeper; retries at ${until}`;
      const details = `open (opening 1, escalation 1) until ${until}; reset: keeper circuit reset ${sid}`;
      // The page fills in as its queries answer: reload until its User Metadata tab shows both (bounded).
      await waitFor(
        "the circuit's summary and current details",
        async () => {
          await page.goto(`${server.uiUrl}/namespaces/default/workflows/${circuitId}`);
          await page.getByText('User Metadata').first().click({ timeout: 10_000 });
          await page.waitForLoadState('networkidle', { timeout: 10_000 }).catch(() => undefined);
          return (await shows(page, summary)) && (await shows(page, details));
        },
        40_000,
        500,
      ).catch(async (err) => {
        await page.screenshot({ path: path.join(path.dirname(SCREENSHOT), 'temporal-ui-circuit.failed.png') });
        throw err;
      });
    });
    await page.screenshot({ path: path.join(path.dirname(SCREENSHOT), 'temporal-ui-circuit.png') });
  }, 120_000);
});
