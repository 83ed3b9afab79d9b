/** The README's configuration reference, generated from the settings module so the two never disagree. */
import { SETTINGS } from '../settings';

export function configTable(): string {
  const rows = SETTINGS.map((s) => {
    const def = typeof s.default === 'function' ? 'hostname' : s.default === undefined ? 'unset' : s.default === '' ? '(none)' : s.default;
    return `| \`--${s.flag}\` | \`${s.env}\` | \`${def}\` | ${s.help.replace(/</g, "&lt;")} |`;
  });
  return ['| flag | variable | default | what it does |', '|---|---|---|---|', ...rows].join('\n');
}

if (require.main === module) process.stdout.write(configTable() + '\n');
