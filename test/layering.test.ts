/**
 * keeper's rooms, checked statically so that they stay what docs/architecture.md says: every import follows an
 * allowed arrow of .dependency-cruiser.cjs (workflow code runs only deterministic modules, the CLI reaches the
 * host only through host/) and none closes a circle; the doc shows those arrows; SQL only in src/db/; every ah
 * defect a comment cites is defined in docs/ah-differences.md; no comment points outside the repository or
 * names an issue; and every function in src/ fits on a screen.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { files, read, ROOT } from './helpers/repo-files';

const DEPCRUISE = path.join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
/** The allowed arrows: what each room of src/ may import (a name ending in / is a folder). */
const ARROWS = createRequire(__filename)(path.join(ROOT, '.dependency-cruiser.cjs')).ARROWS as Record<string, string[]>;

/** A rule broken, as dependency-cruiser reports it. */
interface Violation {
  rule: { name: string };
  from: string;
  to: string;
  cycle?: { name: string }[];
}

const describeViolation = (v: Violation) => `${v.rule.name}: ${v.from} → ${v.cycle ? v.cycle.map((c) => c.name).join(' → ') : v.to}`;

describe('the rooms', () => {
  it('SQL lives only in src/db/', () => {
    const offenders = files('src')
      .filter((f) => !f.startsWith('src/db/'))
      .filter((f) =>
        /\.(prepare|pragma|transaction)\(|\b(SELECT\s+[\w*(,\s]+\s+FROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b/.test(
          read(f),
        ),
      );
    expect(offenders).toEqual([]);
  });

  it('every import follows an allowed arrow, and none closes a circle, type-only ones included (dependency-cruiser)', () => {
    // It exits non-zero when a rule is broken; the JSON on stdout names each violation either way.
    const run = spawnSync(process.execPath, [DEPCRUISE, 'src', '--config', '.dependency-cruiser.cjs', '--output-type', 'json'], {
      cwd: ROOT,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(run.stdout, run.stderr).toMatch(/^\{/);
    const { summary } = JSON.parse(run.stdout) as { summary: { violations: Violation[]; totalCruised: number } };
    expect(summary.violations.map(describeViolation)).toEqual([]);
    expect(summary.totalCruised).toBeGreaterThan(100); // it did read src/
  });

  it('only app/ makes a logger, a Docker client, a state DB connection, a Temporal connection or client, or starts an embedded Temporal', () => {
    // Each maker, and the module that defines it (a factory may call itself). The SDK's own connects are wrapped
    // by temporal/connection.ts and temporal/native.ts, which only app/ calls; dev-server.ts's probe of whether a
    // dev server answers is the one other connection.
    const makers: [RegExp, string][] = [
      [/\bcreateLogger\(/, 'src/log.ts'],
      [/\bnew DockerClient\(/, 'src/docker/client.ts'],
      [/\bopenStateDb(AsIs)?\(/, 'src/db/open.ts'],
      [/\bstartDevServer\(/, 'src/temporal/dev-server.ts'],
      [/\bnew Client\(/, 'src/app/'],
      [/\bconnectClient\(/, 'src/temporal/connection.ts'],
      [/\bconnectNative\(/, 'src/temporal/native.ts'],
      [/\bNativeConnection\.connect\(/, 'src/temporal/native.ts'],
      [/(?<!Native)\bConnection\.connect\(/, 'src/temporal/connection.ts'],
    ];
    const probe = 'src/temporal/dev-server.ts';
    const outside = files('src')
      .filter((f) => !f.startsWith('src/app/'))
      .flatMap((f) =>
        makers
          .filter(([pattern, home]) => f !== home && !(f === probe && /Connection/.test(pattern.source)) && pattern.test(read(f)))
          .map(([pattern]) => `${f}: ${pattern.source}`),
      );
    expect(outside).toEqual([]);
  });

  it("the environment is read in settings.ts only (SETTINGS' variables, and what is handed on whole)", () => {
    expect(files('src').filter((f) => f !== 'src/settings.ts' && /\bprocess\.env\b/.test(read(f)))).toEqual([]);
  });

  it('docs/architecture.md shows the arrows .dependency-cruiser.cjs checks', () => {
    const shown = Object.fromEntries(
      [...read('docs/architecture.md').matchAll(/^\| `([^`]+)` \| (.*) \|$/gm)].map((m) => [
        m[1],
        [...m[2].matchAll(/`([^`]+)`/g)].map((x) => x[1]),
      ]),
    );
    expect(shown).toEqual(ARROWS);
  });

  it('every ah defect a comment cites (W-…) is defined in docs/ah-differences.md', () => {
    const defined = new Set([...read('docs/ah-differences.md').matchAll(/^\| (W-[A-Z]?\d+) \|/gm)].map((m) => m[1]));
    const cited = new Set([...files('src'), ...files('test')].flatMap((f) => [...read(f).matchAll(/\bW-[A-Z]?\d+\b/g)].map((m) => m[0])));
    expect([...cited].filter((c) => !defined.has(c))).toEqual([]);
    expect(cited.size).toBeGreaterThan(10);
  });

  it('no comment points outside the repository', () => {
    const outside = [...files('src'), ...files('test'), ...files('bench'), ...files('scripts', '.sh')]
      .filter((f) => f !== 'test/layering.test.ts') // the patterns below
      .filter((f) => /ah-spec|DESIGN\.md|shared\/reference|temporal-notes|peers\.md|\bspec §/.test(read(f)));
    expect(outside).toEqual([]);
  });

  it('no comment names an issue number or a requirement code defined nowhere in the repository', () => {
    const cited = [...files('src'), ...files('test'), ...files('bench'), ...files('scripts', '.sh')]
      .filter((f) => f !== 'test/layering.test.ts') // the patterns below
      .flatMap((f) => [...read(f).matchAll(/\b(issues? #?\d+|#\d{2,}\b|R-\d+)/gi)].map((m) => `${f}: ${m[0]}`));
    expect(cited).toEqual([]);
  });

  it('every src/ path a comment in src/ names is a file of the repository', () => {
    const missing = files('src').flatMap((f) =>
      [...read(f).matchAll(/\b(?:src\/)?(?:[\w-]+\/)+[\w.-]+\.ts\b/g)]
        .map((m) => m[0])
        .filter((p) => ![p, path.join('src', p), path.join(path.dirname(f), p)].some((c) => fs.existsSync(path.join(ROOT, c))))
        .map((p) => `${f}: ${p}`),
    );
    expect(missing).toEqual([]);
  });

  it(`no function in src/ is over ${MAX_FUNCTION_LINES} lines`, () => {
    const long = files('src').flatMap((f) => longFunctions(f, MAX_FUNCTION_LINES));
    expect(long).toEqual([]);
  });
});

const MAX_FUNCTION_LINES = 60;

/** Every function, method, arrow and accessor with a body longer than `max` lines, as `file:line name (n lines)`. */
function longFunctions(rel: string, max: number): string[] {
  const sf = ts.createSourceFile(rel, read(rel), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const lines = sf.getLineAndCharacterOfPosition(node.end).line - first + 1;
      const name = node.name && ts.isIdentifier(node.name) ? node.name.text : '(anonymous)';
      if (lines > max) found.push(`${rel}:${first + 1} ${name} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}
