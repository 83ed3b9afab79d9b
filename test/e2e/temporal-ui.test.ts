/**
 * The Temporal UI as an operator uses it: the dev server's web UI, opened in headless Chromium (Debian's,
 * driven by playwright-core), lists this host's runs when filtered by the KeeperHost search attribute.
 * The screenshot it saves is the one the README shows.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { openStateDb, type StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { KeeperHost } from '../../src/search-attributes';
import { taskQueueFor } from '../../src/ids';
import { freePort, startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { createKeeperHost } from '../../src/app/keeper-host';
import { tempDir, testSettings, waitFor } from '../helpers/fixtures';

const CHROMIUM = process.env.KEEPER_CHROMIUM ?? '/usr/bin/chromium';
// Written under test/.artifacts (git-ignored); docs/temporal-ui-keeper-host.png is a copy of one such run.
const SCREENSHOT = path.join(__dirname, '..', '.artifacts', 'temporal-ui-keeper-host.png');

describe('the Temporal UI', () => {
  let server: DevServer;
  let browser: Browser;
  let connection: Connection;
  let native: NativeConnection;
  let db: StateDb;
  let worker: Worker;
  const settings = testSettings({ hostId: 'ui-demo-host' });

  beforeAll(async () => {
    server = await startDevServer({ uiPort: await freePort() });
    connection = await Connection.connect({ address: server.address });
    native = await NativeConnection.connect({ address: server.address });
    db = openStateDb(path.join(tempDir(), 'state.db'));
    worker = await createKeeperHost(settings, { db, docker: new DockerClient() }).createWorker({
      connection: native,
      namespace: 'default',
      workflowBundle: { codePath: inject('workflowBundlePath') },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
  });

  afterAll(async () => {
    await browser?.close();
    await connection?.close();
    await native?.close();
    db?.close();
    await server?.stop();
  });

  it('finds a reconcileTick run filtered by KeeperHost', async () => {
    const client = new Client({ connection });
    const workflowId = `keeper-${settings.hostId}-reconcile-manual`;
    await worker.runUntil(
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
});
