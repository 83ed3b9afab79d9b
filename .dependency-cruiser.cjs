/**
 * keeper's rooms and the arrows between them, checked by dependency-cruiser (test/layering.test.ts runs it).
 * ARROWS is the one list of what each room of src/ may import; docs/architecture.md shows the same table, and
 * the test fails when the two differ. A name ending in `/` is a folder, any other a file; every import counts,
 * type-only ones too (tsPreCompilationDeps), so a type can close no circle either.
 */
const ARROWS = {
  'cli.ts': ['cli/', 'app/keeper.ts', 'worker.ts', 'settings.ts', 'version.ts', 'text.ts'],
  'cli/': [
    'app/keeper.ts',
    'app/uninstall.ts',
    'loops/',
    'temporal/',
    'host/',
    'workflows/',
    'policy/',
    'contracts/',
    'ids.ts',
    'search-attributes.ts',
    'settings.ts',
    'time.ts',
    'text.ts',
  ],
  'worker.ts': ['app/keeper.ts', 'cli/banner.ts', 'settings.ts'],
  'demo.ts': ['app/keeper.ts', 'host/', 'db/', 'ids.ts', 'names.ts', 'search-attributes.ts', 'settings.ts', 'time.ts'],
  'app/': [
    'loops/',
    'activities/',
    'watch/',
    'host/',
    'temporal/',
    'db/',
    'docker/',
    'policy/',
    'metrics.ts',
    'ids.ts',
    'log.ts',
    'search-attributes.ts',
    'settings.ts',
    'time.ts',
    'text.ts',
  ],
  'loops/': ['activities/', 'host/', 'watch/', 'temporal/', 'db/', 'policy/', 'contracts/', 'metrics.ts', 'settings.ts'],
  'temporal/': ['workflows/', 'contracts/', 'ids.ts', 'search-attributes.ts', 'log.ts', 'settings.ts', 'text.ts'],
  'activities/': ['host/', 'db/', 'notify/', 'policy/', 'contracts/', 'metrics.ts', 'ids.ts', 'log.ts', 'time.ts'],
  'workflows/': ['activities/', 'policy/', 'contracts/', 'ids.ts', 'names.ts', 'search-attributes.ts'],
  'host/': [
    'watch/',
    'db/',
    'docker/engine.ts',
    'docker/errors.ts',
    'notify/',
    'policy/',
    'contracts/',
    'metrics.ts',
    'names.ts',
    'log.ts',
    'settings.ts',
    'time.ts',
    'version.ts',
    'text.ts',
  ],
  'watch/': ['db/', 'docker/engine.ts', 'policy/', 'metrics.ts', 'names.ts', 'log.ts', 'time.ts', 'text.ts'],
  'metrics.ts': ['db/', 'contracts/'],
  'db/': ['policy/', 'contracts/', 'time.ts', 'text.ts'],
  'docker/': ['text.ts'],
  'notify/': ['policy/', 'contracts/'],
  'policy/': ['contracts/', 'names.ts', 'settings.ts', 'text.ts'],
  'contracts/': [],
  'log.ts': ['settings.ts'],
  'settings.ts': ['text.ts'],
  'ids.ts': [],
  'names.ts': [],
  'search-attributes.ts': [],
  'time.ts': [],
  'text.ts': [],
  'version.ts': [],
};

/** What workflow code may run: Temporal's workflow packages, ms and the pure modules (their own imports are checked too). */
const DETERMINISTIC = ['workflows/', 'policy/', 'contracts/', 'ids.ts', 'names.ts', 'search-attributes.ts', 'text.ts'];

const pathOf = (name) => `^src/${name.replace(/\./g, '\\.')}${name.endsWith('/') ? '' : '$'}`;

const roomRules = Object.entries(ARROWS).map(([room, allowed]) => ({
  name: `arrows-of-${room}`,
  comment: `${room} may import only ${allowed.join(', ') || 'nothing else in src/'} (docs/architecture.md)`,
  severity: 'error',
  from: { path: pathOf(room) },
  to: { path: '^src/', pathNot: [pathOf(room), ...allowed.map(pathOf)] },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no module reaches itself again through its imports, type-only ones included',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'every-module-in-a-room',
      comment: 'a module of src/ that ARROWS does not name has no allowed arrows: give it a room',
      severity: 'error',
      from: { path: '^src/', pathNot: Object.keys(ARROWS).map(pathOf) },
      to: {},
    },
    ...roomRules,
    {
      name: 'only-app-reaches-the-docker-adapter',
      comment:
        'only app/ imports src/docker/client.ts (dockerode); everything else sees the Engine interface (engine.ts) and DockerError (errors.ts)',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/app/', '^src/docker/client\\.ts$'] },
      to: { path: '^src/docker/client\\.ts$' },
    },
    {
      name: 'no-undeclared-package',
      comment: 'every package src/ imports is declared in package.json (test/dependencies.test.ts checks the rest)',
      severity: 'error',
      from: {},
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown'] },
    },
    {
      name: 'shipped-code-loads-no-dev-dependency',
      comment: "what src/ loads at run time is a dependency: an operator's install has no devDependencies",
      severity: 'error',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'workflows-run-only-deterministic-code',
      comment: 'workflow code imports at run time only @temporalio/workflow, @temporalio/common, ms and pure modules',
      severity: 'error',
      from: { path: DETERMINISTIC.map(pathOf) },
      to: {
        dependencyTypesNot: ['type-only'],
        // ms turns durations into words and back, purely; @temporalio/common runs it in workflows itself.
        pathNot: [...DETERMINISTIC.map(pathOf), '^node_modules/@temporalio/(workflow|common)/', '^node_modules/ms/'],
      },
    },
  ],
  options: {
    // A package is a leaf: its own imports are not read, but every import of one is checked (declared in
    // package.json, not a devDependency of shipped code, not in workflow code unless allowed).
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^dist/' },
  },
};

// For test/layering.test.ts, which compares it with docs/architecture.md. Not enumerable: dependency-cruiser
// refuses a configuration with keys of its own.
Object.defineProperty(module.exports, 'ARROWS', { value: ARROWS, enumerable: false });
