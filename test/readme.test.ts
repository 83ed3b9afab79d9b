/** The README is the front door: its quick start and configuration reference must stay true. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configTable } from '../src/cli/config-table';

const readme = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');
const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));

describe('README', () => {
  it('has the configuration reference generated from the settings module', () => {
    const between = readme.split('<!-- config-table:start')[1]?.split('<!-- config-table:end -->')[0] ?? '';
    const table = between.slice(between.indexOf('-->') + 3).trim();
    expect(table).toBe(configTable());
  });

  it('has the two-command quick start, and package.json runs what it says', () => {
    expect(readme).toMatch(/npm install\nnpm start .*\nnpm test /);
    expect(pkg.scripts.start).toBe('node bin/keeper.js worker');
    expect(pkg.scripts.test).toBe('vitest run');
    expect(fs.readFileSync(path.join(__dirname, '..', '.ci', 'run'), 'utf8')).toMatch(/^npm test$/m);
  });

  it('names every benchmark script it quotes', () => {
    for (const [, script] of readme.matchAll(/npm run (bench:[a-z]+)/g)) expect(pkg.scripts).toHaveProperty(script);
  });
});
