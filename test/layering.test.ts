/**
 * keeper's rooms, checked statically so that they stay what docs/architecture.md says: SQL only in src/db/;
 * workflow code imports at run time only Temporal's workflow and common packages and pure modules; the host
 * operations sit below the activities; every ah defect a comment cites is defined in docs/ah-differences.md; no
 * comment points outside the repository; and every function in src/ fits on a screen.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '..');

function files(dir: string, ext = '.ts'): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name.startsWith('.') ? [] : files(rel, ext);
    return rel.endsWith(ext) ? [rel] : [];
  });
}

const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');

/** The modules a file imports at run time (type-only imports are erased), as repo-relative paths or package names. */
function runtimeImports(rel: string): string[] {
  const text = read(rel);
  const specs = [...text.matchAll(/^import\s+(?!type\b)([^;]*?)\s+from\s+'([^']+)';/gm)]
    .filter((m) => !/^\{\s*(type\s+\w+\s*,?\s*)+\}$/.test(m[1].trim())) // `import { type A, type B }` is erased too
    .map((m) => m[2]);
  return specs.map((s) => (s.startsWith('.') ? resolveModule(path.dirname(rel), s) : s));
}

function resolveModule(fromDir: string, spec: string): string {
  const base = path.join(fromDir, spec);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) if (fs.existsSync(path.join(ROOT, candidate))) return candidate;
  return base;
}

describe('the rooms', () => {
  it('SQL lives only in src/db/', () => {
    const offenders = files('src').filter((f) => !f.startsWith('src/db/')).filter((f) =>
      /\.(prepare|pragma|transaction)\(|\b(SELECT\s+[\w*(,\s]+\s+FROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b/.test(read(f)));
    expect(offenders).toEqual([]);
  });

  it('workflow code imports at run time only @temporalio/workflow, @temporalio/common and pure modules', () => {
    // src/policy/ holds the pure rules workflows and activities share; the walk checks their imports too.
    const pure = new Set(['src/ids.ts', 'src/search-attributes.ts', 'src/names.ts']);
    const allowedPackages = new Set(['@temporalio/workflow', '@temporalio/common']);
    const seen = new Set<string>();
    const visit = (rel: string): string[] => {
      if (seen.has(rel)) return [];
      seen.add(rel);
      return runtimeImports(rel).flatMap((dep) => {
        if (!dep.startsWith('src/')) return allowedPackages.has(dep) ? [] : [`${rel} imports ${dep}`];
        if (!dep.startsWith('src/workflows/') && !dep.startsWith('src/policy/') && !pure.has(dep)) return [`${rel} imports ${dep}`];
        return visit(dep);
      });
    };
    expect(files('src/workflows').flatMap(visit)).toEqual([]);
    expect(seen.size).toBeGreaterThan(5); // it did walk the workflows
  });

  it('host operations, the DB layer and the pure rules never import the rooms above them', () => {
    const above: Record<string, string[]> = {
      'src/host/': ['src/activities/', 'src/cli', 'src/keeper-host.ts', 'src/worker.ts', 'src/temporal/', 'src/demo.ts'],
      'src/db/': ['src/host/', 'src/activities/', 'src/cli', 'src/temporal/', 'src/keeper-host.ts', 'src/worker.ts'],
      'src/policy/': ['src/host/', 'src/activities/', 'src/cli', 'src/temporal/', 'src/db/', 'src/docker/', 'src/keeper-host.ts'],
      'src/activities/': ['src/cli', 'src/keeper-host.ts', 'src/worker.ts', 'src/demo.ts'],
    };
    const violations = Object.entries(above).flatMap(([room, forbidden]) =>
      files(room).flatMap((f) => runtimeImports(f).filter((dep) => forbidden.some((x) => dep.startsWith(x))).map((dep) => `${f} imports ${dep}`)));
    expect(violations).toEqual([]);
  });

  it("every ah defect a comment cites (W-…) is defined in docs/ah-differences.md", () => {
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
