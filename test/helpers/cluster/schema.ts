/**
 * The server's databases, made as an operator makes them: temporal-sql-tool with the postgres12 plugin creates
 * each database, sets up the schema at version 0.0 and updates it along the server module's versioned
 * directories (docker-compose.temporal.yml runs the same commands). No vitest imports.
 */
import path from 'node:path';
import { DATABASES, SCHEMA_DIRS, SQL_PLUGIN, type SqlEndpoint } from './facts';
import { run, settleAll } from './run';

/** The sql tool's arguments for one database: the password goes through SQL_PASSWORD, not the command line. */
export function sqlToolArgs(sql: SqlEndpoint, database: string): string[] {
  return ['--plugin', SQL_PLUGIN, '--ep', sql.host, '-p', String(sql.port), '-u', sql.user, '--db', database];
}

export async function setupSchemas(sqlTool: string, schemaDir: string, sql: SqlEndpoint): Promise<void> {
  const each = (Object.keys(DATABASES) as (keyof typeof DATABASES)[]).map(async (store) => {
    const base = sqlToolArgs(sql, DATABASES[store]);
    const step = (name: string, args: string[]) =>
      run(`temporal-sql-tool ${name} (${DATABASES[store]})`, sqlTool, [...base, ...args], {
        timeoutMs: 120_000,
        env: { SQL_PASSWORD: sql.password },
      });
    await step('create-database', ['create-database']);
    await step('setup-schema', ['setup-schema', '-v', '0.0']);
    await step('update-schema', ['update-schema', '-d', path.join(schemaDir, SCHEMA_DIRS[store], 'versioned')]);
  });
  await settleAll(each);
}
