/**
 * Workflow code is bundled once at build time into dist/workflow-bundle.js, so that the worker and one-off
 * CLI commands start without webpacking on every run. Under tests and tsx the sources are bundled instead.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

export const WORKFLOWS_PATH = path.join(__dirname, '..', 'workflows', `index${path.extname(__filename)}`);
const PREBUILT = path.join(__dirname, '..', 'workflow-bundle.js');

export function prebuiltBundle(): { codePath: string } | undefined {
  return path.extname(__filename) === '.js' && fs.existsSync(PREBUILT) ? { codePath: PREBUILT } : undefined;
}

export async function writeBundle(file = PREBUILT): Promise<void> {
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: (m: string) => console.error(m) };
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quiet });
  fs.writeFileSync(file, code);
}

if (require.main === module) {
  writeBundle().catch((err) => {
    console.error(`bundling workflows failed: ${err}`);
    process.exit(1);
  });
}
