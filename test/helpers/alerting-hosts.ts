/**
 * Keeper hosts that alert real webhook receivers on loopback, for the calling file's tests: each host a fresh state
 * DB, its settings and a keeper worker on the given server, polling until the test ends (then stopped, its DB
 * closed); the receivers go down when the file ends.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, afterEach } from 'vitest';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import type { RawSettings, Settings } from '../../src/settings';
import { freshDb, testSettings } from './fixtures';
import { keeperWorker } from './temporal';
import { WebhookReceiver } from './webhook-receiver';

export interface AlertingHost {
  settings: Settings;
  db: StateDb;
  file: string;
  worker: Worker;
}

/** `afterEachTest` runs after the test's worker has stopped (e.g. to remove the test's containers). */
export function alertingHostsForFile(env: TestWorkflowEnvironment, afterEachTest?: () => Promise<void>) {
  const receivers: WebhookReceiver[] = [];
  let running: { stop(): Promise<void> } | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    await afterEachTest?.();
  });
  afterAll(async () => Promise.all(receivers.map((r) => r.down())));
  return {
    /** A receiver on a loopback port of its own. */
    async receiver(): Promise<WebhookReceiver> {
      const r = await WebhookReceiver.start();
      receivers.push(r);
      return r;
    },
    /** A host with these settings (its webhooks among them), its worker polling until the test ends. */
    async host(raw: RawSettings): Promise<AlertingHost> {
      const { db, file } = freshDb();
      const settings = testSettings({ db: file, ...raw });
      const worker = await keeperWorker(env, { settings, db, docker: new DockerClient() });
      const done = worker.run();
      running = {
        stop: async () => {
          worker.shutdown();
          await done;
          db.close();
        },
      };
      return { settings, db, file, worker };
    },
  };
}
