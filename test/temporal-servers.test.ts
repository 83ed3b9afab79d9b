/**
 * The SDK reaches both provisioned servers through `existing-path` and never tries to download one.
 * (The suite itself shares servers started once in global-setup; this proves the SDK's own launcher works.)
 */
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { resolveTemporalCli } from '../src/temporal/dev-server';

describe('provisioned Temporal servers', () => {
  it('starts the CLI dev server through existing-path', async () => {
    const env = await TestWorkflowEnvironment.createLocal({
      server: { executable: { type: 'existing-path', path: resolveTemporalCli() } },
    });
    try {
      const info = await env.connection.workflowService.getSystemInfo({});
      expect(info.serverVersion).toMatch(/^1\.\d+\.\d+/);
      expect(env.supportsTimeSkipping).toBe(false);
    } finally {
      await env.teardown();
    }
  });

  it('uses the provisioned CLI, not a download', () => {
    expect(resolveTemporalCli()).toBe(path.resolve(__dirname, '..', '.tools', 'bin', 'temporal'));
  });
});
