/**
 * Every package the project imports is declared in package.json, where it belongs: what the shipped CLI loads
 * (src/ and bin/, at run time) in `dependencies`, the rest (tests, benchmarks, scripts, tool configs, type-only
 * imports) in either. An undeclared one works only while npm happens to hoist it beside keeper, which a global
 * install does not promise. The imports are read with the TypeScript compiler's parser: static imports and
 * re-exports, `import type`, `require()`, `import()` and `typeof import()`.
 */
import { spawnSync } from 'node:child_process';
import { builtinModules } from 'node:module';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { files, read, ROOT } from './helpers/repo-files';

const CODE = ['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs'];
/** Where the project's code lives, and the tool configs at the root (ESLint's, vitest's, dependency-cruiser's). */
const SOURCES = () => [...['src', 'bin', 'bench', 'scripts', 'test'].flatMap((d) => files(d, CODE)), ...rootConfigs()];
const rootConfigs = () => files('.', CODE).filter((f) => !f.includes('/'));
/** What ships: dist/ (compiled from src/) and bin/. */
const shipped = (file: string) => file.startsWith('src/') || file.startsWith('bin/');

const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
const BUILTINS = new Set(builtinModules);

interface Import {
  file: string;
  specifier: string;
  /** Erased at compile time: `import type`, `export type … from`, `typeof import()`. */
  typeOnly: boolean;
}

/** Every module a source text imports, with whether only its types are. */
function importsOf(file: string, text: string): Import[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Import[] = [];
  const add = (spec: ts.Expression | undefined, typeOnly: boolean) => {
    if (spec && ts.isStringLiteralLike(spec)) found.push({ file, specifier: spec.text, typeOnly });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) add(node.moduleSpecifier, typeOnlyImport(node));
    else if (ts.isExportDeclaration(node)) add(node.moduleSpecifier, node.isTypeOnly);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference))
      add(node.moduleReference.expression, node.isTypeOnly);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal, true);
    else if (ts.isCallExpression(node) && isRequireOrImport(node.expression)) add(node.arguments[0], false);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

function typeOnlyImport(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (!clause) return false; // `import 'x'`: run for its effects
  if (clause.isTypeOnly) return true;
  const named = clause.namedBindings;
  return (
    !clause.name &&
    named !== undefined &&
    ts.isNamedImports(named) &&
    named.elements.length > 0 &&
    named.elements.every((e) => e.isTypeOnly)
  );
}

const isRequireOrImport = (callee: ts.Expression) =>
  callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require');

/** The package an import names (`@scope/name` or `name`), or undefined for a relative path or one of Node's own. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || BUILTINS.has(specifier) || specifier.startsWith('node:')) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

const where = (i: Import) => `${i.file} imports ${i.specifier}${i.typeOnly ? ' (types only)' : ''}`;

describe('declared packages', () => {
  const imports = SOURCES().flatMap((f) => importsOf(f, read(f)));
  const packages = imports.flatMap((i) => {
    const name = packageOf(i.specifier);
    return name ? [{ ...i, name }] : [];
  });

  it('reads every kind of import, and tells a package from a path or a built-in', () => {
    const sample = [
      "import a from 'pkg-a/sub';",
      "import type { B } from '@scope/b';",
      "import { type C } from 'c';",
      "export { d } from 'd';",
      "const e = require('e');",
      "const f = () => import('f');",
      "let g: typeof import('g');",
      "import fs from 'node:fs';",
      "import './local';",
    ].join('\n');
    expect(importsOf('sample.ts', sample).map((i) => [packageOf(i.specifier) ?? null, i.typeOnly])).toEqual([
      ['pkg-a', false],
      ['@scope/b', true],
      ['c', true],
      ['d', false],
      ['e', false],
      ['f', false],
      ['g', true],
      [null, false],
      [null, false],
    ]);
    expect(packageOf('fs')).toBeUndefined();
    expect(imports.length).toBeGreaterThan(500); // it did read the project
  });

  it('every imported package is declared in package.json', () => {
    const declared = { ...pkg.dependencies, ...pkg.devDependencies };
    expect(packages.filter((p) => !(p.name in declared)).map(where)).toEqual([]);
  });

  it('what the shipped CLI loads at run time is a dependency, not a devDependency', () => {
    const loaded = packages.filter((p) => shipped(p.file) && !p.typeOnly);
    expect(loaded.filter((p) => !(p.name in pkg.dependencies)).map(where)).toEqual([]);
    // …and every dependency is something it loads: what only tests and tools need stays out of an operator's install.
    const names = new Set(loaded.map((p) => p.name));
    expect(Object.keys(pkg.dependencies).filter((d) => !names.has(d))).toEqual([]);
  });

  it('npm ls finds each imported package installed as package.json and the lock file declare it', () => {
    const ls = spawnSync('npm', ['ls', '--depth=0', '--json'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    const tree = JSON.parse(ls.stdout) as {
      problems?: string[];
      dependencies?: Record<string, { version?: string; missing?: boolean; invalid?: string; extraneous?: boolean }>;
    };
    expect(tree.problems ?? [], ls.stderr).toEqual([]);
    const wrong = [...new Set(packages.map((p) => p.name))].filter((name) => {
      const dep = tree.dependencies?.[name];
      return !dep?.version || dep.missing || dep.invalid || dep.extraneous;
    });
    expect(wrong).toEqual([]);
  });
});
