/**
 * The docs cannot drift from the code: every code name they cite exists. What counts as a cited code name, in an
 * inline code span of README.md, RELIABILITY.md and docs/*.md (fenced blocks are examples, not citations) or of a
 * comment in deploy/prometheus/keeper-alerts.yml:
 * - `name()`: a function keeper exports, a workflow type or an activity;
 * - `camelCase` (a lower-case start and a capital inside): a workflow type, an activity, a name src/ exports, or a
 *   field keeper declares (its JSON output, its options);
 * - `keeper_…`: a metric, label or table keeper names in src/;
 * - a path (a slash in it) whose first part is a folder of the repository or a room of src/: it exists, as
 *   written or under src/; a bare file name (`record.ts`): a file of the repository has that name.
 * Prose words (`running`, `reset`) are none of these. Names of Temporal's SDK, Node or Go that the docs cite
 * for contrast are listed in OUTSIDE with where they come from. Relative links of the docs must lead to a file,
 * and the alert file's comments must name only paths that exist, backticked or not.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { files, read, ROOT } from './helpers/repo-files';

const DOCS = ['README.md', 'RELIABILITY.md', ...files('docs', '.md')];
const ALERTS = 'deploy/prometheus/keeper-alerts.yml';

/** Names the docs cite that are not keeper's, and whose they are. */
const OUTSIDE: Record<string, string> = {
  patched: "Temporal's workflow API (patched())",
  deprecatePatch: "Temporal's workflow API",
  debugMode: "Temporal's WorkerOptions",
  maxConcurrentWorkflowTaskPolls: "Temporal's WorkerOptions",
  historySizeBytes: "Temporal's DescribeWorkflowExecution response",
  workflowId: "the SDK's activity log attributes",
  workflowRunId: "the SDK's activity log attributes",
  workflowType: "the SDK's activity log attributes",
  activityId: "the SDK's activity log attributes",
  activityType: "the SDK's activity log attributes",
  execFile: "Node's child_process",
  execSync: "Node's child_process",
  spawnSync: "Node's child_process",
};

/** A cited name, and where. */
interface Citation {
  doc: string;
  text: string;
}

/** The inline code spans of a Markdown file, fenced blocks left out. */
function markdownSpans(doc: string): Citation[] {
  const prose = read(doc).replace(/^```[\s\S]*?^```/gm, '');
  return [...prose.matchAll(/`([^`\n]+)`/g)].map((m) => ({ doc, text: m[1] }));
}

/** The alert file's comments, line by line (a `#` that starts a line or follows a blank). */
const alertComments = () =>
  read(ALERTS)
    .split('\n')
    .flatMap((l) => /(?:^|\s)#(.*)$/.exec(l)?.[1] ?? []);

const CITATIONS: Citation[] = [
  ...DOCS.flatMap(markdownSpans),
  ...alertComments().flatMap((c) => [...c.matchAll(/`([^`]+)`/g)].map((m) => ({ doc: ALERTS, text: m[1] }))),
];

/** What src/ declares: exported names, exported functions, and every field name of its types and objects. */
function declaredInSrc(): { exports: Set<string>; functions: Set<string>; fields: Set<string> } {
  const exports = new Set<string>();
  const functions = new Set<string>();
  const fields = new Set<string>();
  for (const f of files('src')) {
    const sf = ts.createSourceFile(f, read(f), ts.ScriptTarget.Latest, true);
    for (const s of sf.statements) collectExports(s, exports, functions);
    const visit = (n: ts.Node): void => {
      const named = ts.isPropertySignature(n) || ts.isPropertyAssignment(n) || ts.isShorthandPropertyAssignment(n);
      if ((named || ts.isPropertyDeclaration(n) || ts.isMethodDeclaration(n)) && ts.isIdentifier(n.name)) fields.add(n.name.text);
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return { exports, functions, fields };
}

function collectExports(s: ts.Statement, exports: Set<string>, functions: Set<string>): void {
  if (ts.isExportDeclaration(s) && s.exportClause && ts.isNamedExports(s.exportClause)) {
    for (const e of s.exportClause.elements) exports.add(e.name.text);
    return;
  }
  if (!(ts.canHaveModifiers(s) && ts.getModifiers(s)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword))) return;
  if (ts.isVariableStatement(s)) {
    for (const d of s.declarationList.declarations) {
      if (!ts.isIdentifier(d.name)) continue;
      exports.add(d.name.text);
      if (d.initializer && (ts.isArrowFunction(d.initializer) || ts.isFunctionExpression(d.initializer))) functions.add(d.name.text);
    }
  } else if (
    (ts.isFunctionDeclaration(s) ||
      ts.isClassDeclaration(s) ||
      ts.isInterfaceDeclaration(s) ||
      ts.isTypeAliasDeclaration(s) ||
      ts.isEnumDeclaration(s)) &&
    s.name
  ) {
    exports.add(s.name.text);
    if (ts.isFunctionDeclaration(s)) functions.add(s.name.text);
  }
}

/** The workflow types: what src/workflows/index.ts exports. */
function workflowTypes(): Set<string> {
  const sf = ts.createSourceFile('index.ts', read('src/workflows/index.ts'), ts.ScriptTarget.Latest, true);
  const names = new Set<string>();
  for (const s of sf.statements) collectExports(s, names, new Set());
  return names;
}

/**
 * The activity names: the properties of each `…Activities` type src/activities/ exports (what a group's factory
 * returns: each loop's, and the host's own), type-checked. The worker registers them all (src/loops/registry.ts).
 */
function activityNames(): Set<string> {
  const roots = files('src/activities').map((f) => path.join(ROOT, f));
  // Only the activity files: their other imports are not needed to name the returned object's properties.
  const program = ts.createProgram(roots, { noResolve: true, types: [], noEmit: true, strict: true, target: ts.ScriptTarget.ES2022 });
  const checker = program.getTypeChecker();
  const groups = roots.flatMap((f) => {
    const module = checker.getSymbolAtLocation(program.getSourceFile(f)!);
    return module ? checker.getExportsOfModule(module).filter((s) => /Activities$/.test(s.name) && s.flags & ts.SymbolFlags.TypeAlias) : [];
  });
  if (groups.length < 6) throw new Error(`src/activities/ exports ${groups.length} …Activities types, not one per group`);
  return new Set(groups.flatMap((g) => checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(g)).map((p) => p.name)));
}

/** Folders of the repository a doc may cite a path in, and src/'s rooms (cited as `db/services.ts`). */
const ROOT_FOLDERS = ['src', 'test', 'bench', 'scripts', 'deploy', 'docs', 'bin', '.ci'];
const ROOMS = fs.readdirSync(path.join(ROOT, 'src'));
const PATH = /^\.?[\w-]+(\/[\w.-]+)*\/?$/;
const FILE_NAME = /^[\w.-]+\.(ts|js|mjs|cjs|mts|sh|ya?ml|json)$/;

/** Every file name of the repository's sources, for bare file names. */
const REPO_FILE_NAMES = new Set(
  [...files('.', ['.ts', '.js', '.mjs', '.cjs', '.mts', '.sh', '.yml', '.yaml', '.json'])].map((f) => path.basename(f)),
);

/** Whether a span names a path of the repository that should exist, and if so, whether it does. */
function pathCited(text: string): 'exists' | 'missing' | undefined {
  if (PATH.test(text) && text.includes('/')) {
    const first = text.split('/')[0];
    if (ROOT_FOLDERS.includes(first)) return fs.existsSync(path.join(ROOT, text)) ? 'exists' : 'missing';
    if (ROOMS.includes(first)) return fs.existsSync(path.join(ROOT, 'src', text)) ? 'exists' : 'missing';
    return undefined;
  }
  if (FILE_NAME.test(text)) return REPO_FILE_NAMES.has(text) ? 'exists' : 'missing';
  return undefined;
}

const CALL = /^([a-z][A-Za-z0-9]*)\(\)$/;
const CAMEL = /^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$/;
const KEEPER_NAME = /^keeper_[a-z0-9_]*[a-z0-9]$/;

describe('names the docs cite', () => {
  const src = declaredInSrc();
  const workflows = workflowTypes();
  const activities = activityNames();
  const srcText = files('src')
    .map((f) => read(f))
    .join('\n');
  const where = (c: Citation) => `${c.doc}: \`${c.text}\``;

  it('finds the workflow types, the activities and the exports to compare with', () => {
    expect([...workflows]).toEqual(expect.arrayContaining(['reconcileTick', 'circuitBreaker', 'gcSweep', 'poolRefill', 'notifyOperators']));
    expect([...activities]).toEqual(expect.arrayContaining(['housekeep', 'observeHost', 'applyObservation']));
    expect(src.functions.has('recordCrash')).toBe(true);
    expect(CITATIONS.length).toBeGreaterThan(500); // it did read the docs
  });

  it('every `name()` is a function keeper exports, a workflow type or an activity', () => {
    const stale = CITATIONS.filter((c) => {
      const name = CALL.exec(c.text)?.[1];
      return name && !(src.functions.has(name) || workflows.has(name) || activities.has(name) || name in OUTSIDE);
    });
    expect(stale.map(where)).toEqual([]);
  });

  it('every `camelCase` name is a workflow type, an activity, an export or a field of src/', () => {
    const known = (n: string) => workflows.has(n) || activities.has(n) || src.exports.has(n) || src.fields.has(n) || n in OUTSIDE;
    expect(CITATIONS.filter((c) => CAMEL.test(c.text) && !known(c.text)).map(where)).toEqual([]);
  });

  it('every `keeper_…` metric, label or table is one src/ names', () => {
    // Counters are named without `_total` in src/: the exporter appends it (src/temporal/runtime.ts).
    const named = (n: string) => new RegExp(`\\b${n.replace(/_total$/, '')}\\b`).test(srcText);
    expect(CITATIONS.filter((c) => KEEPER_NAME.test(c.text) && !named(c.text)).map(where)).toEqual([]);
  });

  it('every path and file name cited exists', () => {
    expect(CITATIONS.filter((c) => pathCited(c.text) === 'missing').map(where)).toEqual([]);
  });

  it("every path the alert file's comments name exists, backticked or not", () => {
    const named = alertComments().flatMap((c) => c.split(/[\s`(),:]+/).filter((w) => pathCited(w.replace(/\.$/, '')) === 'missing'));
    expect(named).toEqual([]);
  });

  it('every relative link of the docs leads to a file', () => {
    const broken = DOCS.flatMap((doc) =>
      [...read(doc).matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)]
        .map((m) => m[1])
        .filter((target) => !/^[a-z]+:/.test(target) && !fs.existsSync(path.join(ROOT, path.dirname(doc), target)))
        .map((target) => `${doc}: ${target}`),
    );
    expect(broken).toEqual([]);
  });

  it('OUTSIDE lists only names the docs still cite and keeper does not declare', () => {
    const cited = new Set(CITATIONS.map((c) => CALL.exec(c.text)?.[1] ?? c.text));
    const mine = (n: string) => workflows.has(n) || activities.has(n) || src.exports.has(n);
    expect(Object.keys(OUTSIDE).filter((n) => !cited.has(n) || mine(n))).toEqual([]);
  });
});
