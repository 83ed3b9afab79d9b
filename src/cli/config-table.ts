/** The README's configuration reference, generated from the settings schema so the two never disagree. */
import { SETTINGS, type SettingSpec } from '../settings';

function defaultText(s: SettingSpec): string {
  if (s.defaultText !== undefined) return s.defaultText;
  if (s.default === undefined) return 'unset';
  return s.default === '' ? '(none)' : String(s.default);
}

export function configTable(): string {
  const rows = SETTINGS.map((s) => `| \`--${s.flag}\` | \`${s.env}\` | \`${defaultText(s)}\` | ${s.help.replace(/</g, '&lt;')} |`);
  return ['| flag | variable | default | what it does |', '|---|---|---|---|', ...rows].join('\n');
}

if (require.main === module) process.stdout.write(configTable() + '\n');
