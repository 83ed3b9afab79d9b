/** The README's configuration reference, generated from the settings schema so the two never disagree. */
import { defaultText, SETTINGS } from '../settings';
import { TEMPORAL_CONNECTION_VARIABLES } from '../temporal/connection';

export function configTable(): string {
  const rows = SETTINGS.map((s) => `| \`--${s.flag}\` | \`${s.env}\` | \`${defaultText(s)}\` | ${s.help.replace(/</g, '&lt;')} |`);
  // Temporal's own connection variables, read through @temporalio/envconfig: no flag of keeper's.
  for (const v of TEMPORAL_CONNECTION_VARIABLES) rows.push(`| | \`${v.variable}\` | unset | ${v.help.replace(/</g, '&lt;')} |`);
  return ['| flag | variable | default | what it does |', '|---|---|---|---|', ...rows].join('\n');
}

if (require.main === module) process.stdout.write(configTable() + '\n');
