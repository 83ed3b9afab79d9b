/**
 * The README's configuration reference, generated from the settings schema so the two never disagree: the host's
 * own settings first (Temporal's connection variables with them), then each loop's, as its unit names them
 * (src/loops/), in the registry's order. Each group keeps SETTINGS' order.
 */
import { LOOPS } from '../loops/registry';
import { defaultText, SETTINGS, type SettingSpec } from '../settings';
import { TEMPORAL_CONNECTION_VARIABLES } from '../temporal/connection';

const HEADER = ['| flag | variable | default | what it does |', '|---|---|---|---|'];
const escaped = (text: string) => text.replace(/</g, '&lt;');
const row = (s: SettingSpec) => `| \`--${s.flag}\` | \`${s.env}\` | \`${defaultText(s)}\` | ${escaped(s.help)} |`;

export function configTable(): string {
  const owned = new Set(LOOPS.flatMap((l) => l.settings));
  const host = [
    ...SETTINGS.filter((s) => !owned.has(s.key)).map(row),
    // Temporal's own connection variables, read through @temporalio/envconfig: no flag of keeper's.
    ...TEMPORAL_CONNECTION_VARIABLES.map((v) => `| | \`${v.variable}\` | unset | ${escaped(v.help)} |`),
  ];
  const loops = LOOPS.map((l) => [`**The ${l.name} loop**`, '', ...HEADER, ...SETTINGS.filter((s) => l.settings.includes(s.key)).map(row)]);
  return [['**The host**', '', ...HEADER, ...host], ...loops].map((lines) => lines.join('\n')).join('\n\n');
}

if (require.main === module) process.stdout.write(configTable() + '\n');
