// keeper's lint: ESLint's and typescript-eslint's recommended rules, with formatting left to Prettier
// (eslint-config-prettier turns off the rules it owns). `npm run lint` runs this, then `prettier --check .`.
// Not type-aware: recommendedTypeChecked takes ~4x as long (about 37 s against 9 s on a 2-core host).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** An import of a file inside a Temporal SDK package (`@temporalio/common/lib/time`), not of the package. */
const SDK_INTERNALS = /^@temporalio\/[^/]+\/lib(\/|$)/;
const SDK_INTERNALS_WHY = "a Temporal SDK package's lib/ is internal: import the package's public API";

export default tseslint.config(
  { ignores: ['dist/', '.tools/', 'node_modules/', 'coverage/', 'data/', 'test/.artifacts/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      // A leading underscore marks a binding kept on purpose, e.g. a field left out of a rest object.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: false }],
      // Container logs and terminal output are cleaned of control bytes and escape sequences by regex, on purpose.
      'no-control-regex': 'off',
      // The SDK's lib/ files are its internals: they move between releases without notice. Import what a package's
      // index exports. Where no public API exists, one module may reach in, exempted below with its reason.
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [{ regex: SDK_INTERNALS.source, message: SDK_INTERNALS_WHY }] }],
      'no-restricted-syntax': [
        'error',
        ...["CallExpression[callee.name='require']", 'ImportExpression', 'TSImportType'].map((call) => ({
          selector: `${call} Literal[value=${SDK_INTERNALS}]`,
          message: SDK_INTERNALS_WHY,
        })),
      ],
    },
  },
  {
    // The bin script is CommonJS, run by node as is.
    files: ['bin/*.js'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  prettier,
);
