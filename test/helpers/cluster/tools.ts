/**
 * Where the cluster's programs and the server's schema files are: what scripts/provision-temporal-server.sh
 * provides. A missing piece is reported as one line that names the script. No vitest imports.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { resolveTemporalCli } from '../../../src/temporal/dev-server';
import { POSTGRES_MAJOR, TEMPORAL_SERVER_VERSION } from './facts';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const TOOLS_BIN = path.join(ROOT, '.tools', 'bin');
export const CERTS_SCRIPT = path.join(ROOT, 'scripts', 'temporal-certs.sh');
const PROVISION = 'scripts/provision-temporal-server.sh';

export interface ClusterTools {
  server: string;
  sqlTool: string;
  cli: string;
  initdb: string;
  pgCtl: string;
  /** The server module's schema/postgresql/v12 directory in the Go module cache. */
  schemaDir: string;
}

function present(file: string): string {
  if (!fs.existsSync(file)) throw new Error(`cluster: ${file} is missing; run ${PROVISION}`);
  return file;
}

function goModCache(): string {
  if (process.env.GOMODCACHE) return process.env.GOMODCACHE;
  try {
    return execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8', timeout: 30_000 }).trim();
  } catch {
    return path.join(process.env.HOME ?? '/root', 'go', 'pkg', 'mod');
  }
}

/** The provisioned programs and schema files; throws one line naming the first one missing. */
export function clusterTools(): ClusterTools {
  const pgBin = `/usr/lib/postgresql/${POSTGRES_MAJOR}/bin`;
  const moduleDir = path.join(goModCache(), `go.temporal.io/server@v${TEMPORAL_SERVER_VERSION}`);
  return {
    server: present(path.join(TOOLS_BIN, 'temporal-server')),
    sqlTool: present(path.join(TOOLS_BIN, 'temporal-sql-tool')),
    cli: resolveTemporalCli(),
    initdb: present(path.join(pgBin, 'initdb')),
    pgCtl: present(path.join(pgBin, 'pg_ctl')),
    schemaDir: present(path.join(moduleDir, 'schema', 'postgresql', 'v12')),
  };
}
