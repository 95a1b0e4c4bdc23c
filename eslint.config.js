// @ts-check
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');

/**
 * Which project folders each folder may import from (besides itself). Everything not listed is an
 * error, so the layering is written down here and checked by `npm run lint`:
 * workflows run deterministically and see only the contracts; activities never reach back into
 * workflows or the command line; contracts depend on nothing local.
 */
const LOCAL_FOLDERS = [
  'activities',
  'bench',
  'cli',
  'client',
  'common',
  'platform',
  'scripted-model',
  'scripts',
  'test',
  'workers',
  'workflows',
];
const MAY_IMPORT = {
  common: [],
  workflows: ['common'],
  activities: ['common'],
  platform: ['common'],
  client: ['common', 'platform'],
  workers: ['activities', 'client', 'common', 'platform'],
  cli: ['activities', 'client', 'common', 'platform', 'workers'],
  'scripted-model': ['client'],
  scripts: ['activities', 'cli', 'client', 'common', 'platform', 'scripted-model', 'test', 'workers'],
  bench: ['activities', 'client', 'common', 'platform', 'scripted-model', 'workers'],
  test: LOCAL_FOLDERS,
};

/** Folders nest at most this deep (`workflows/operation/x.ts` is depth 2); a deeper file fails lint until it is raised. */
const MAX_DEPTH = 5;

/**
 * The rule for the files `depth` folders below the project root in `folder` (relative paths climb
 * `depth` levels to leave the project's folder and reach another).
 */
function layerRule(folder, depth) {
  const forbidden = LOCAL_FOLDERS.filter((other) => other !== folder && !MAY_IMPORT[folder].includes(other));
  const up = '\\.\\./'.repeat(depth);
  const patterns = forbidden.length
    ? [
        {
          regex: `^${up}(${forbidden.join('|')})(/|$)`,
          message: `${folder}/ may import only from: ${MAY_IMPORT[folder].join(', ') || 'nothing local'} (eslint.config.js)`,
        },
      ]
    : [];
  if (folder === 'workflows') {
    // Deterministic code: its own modules (in its folder or, climbing fewer than `depth` levels, in
    // another folder of workflows/), the contracts, and the workflow SDK (with its streams' workflow
    // side). Nothing else, not even types.
    const sibling = depth > 1 ? `|(\\.\\./){1,${depth - 1}}(?!\\.\\./)` : '';
    patterns.push({
      regex: `^(?!\\./(?!\\.\\./)${sibling}|${up}common/|@temporalio/workflow$|@temporalio/workflow-streams/workflow$)`,
      message:
        'workflows/ import only workflows/, common/, @temporalio/workflow and @temporalio/workflow-streams/workflow: workflow code must stay deterministic',
    });
  }
  const files = [`${folder}/${'*/'.repeat(depth - 1)}*.ts`];
  return { files, rules: { 'no-restricted-imports': ['error', { patterns }] } };
}

/**
 * The settings modules: the only files of the runtime folders that read `process.env`. Every other
 * module gets its settings through its factory's dependencies, so each runtime reads and checks its
 * whole environment in one place when it starts (and `docs/configuration.md` is generated from them).
 */
const SETTINGS_MODULES = ['workers/settings.ts', 'cli/settings.ts', 'platform/settings.ts'];
const envRule = {
  files: ['{activities,workflows,client,cli,common,workers,platform}/**/*.ts'],
  ignores: SETTINGS_MODULES,
  rules: {
    'no-restricted-properties': [
      'error',
      {
        object: 'process',
        property: 'env',
        message: `only the settings modules (${SETTINGS_MODULES.join(', ')}) read process.env; take the value from their settings (eslint.config.js)`,
      },
    ],
  },
};

const layerRules = Object.keys(MAY_IMPORT)
  .filter((folder) => folder !== 'test')
  .flatMap((folder) => [
    ...Array.from({ length: MAX_DEPTH }, (_, i) => layerRule(folder, i + 1)),
    {
      files: [`${folder}/${'*/'.repeat(MAX_DEPTH)}**/*.ts`],
      rules: {
        'no-restricted-syntax': [
          'error',
          { selector: 'Program', message: `deeper than the layer rules reach: raise MAX_DEPTH in eslint.config.js` },
        ],
      },
    },
  ]);

module.exports = tseslint.config(
  {
    ignores: ['node_modules/**', '.data/**', '.tools/**', 'examples/**', 'bench/results/**', 'dist/**', 'coverage/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    // Type-aware rules: every .ts file is in tsconfig.json's program.
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: __dirname } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      // A promise nobody awaits loses its failure; one left running on purpose says so with `void` and why.
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  {
    // common/ is evaluated once per worker and shared by every workflow (common/preloaded.ts): a
    // module-level variable would be one workflow's state seen by all the others.
    files: ['common/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "Program > VariableDeclaration[kind!='const'], Program > ExportNamedDeclaration > VariableDeclaration[kind!='const']",
          message: 'common/ keeps no module-level variable: every workflow shares its modules (common/preloaded.ts)',
        },
      ],
    },
  },
  ...layerRules,
  envRule,
  {
    // Functions a reader takes in at once: none over 100 lines, blank lines and comments included.
    files: ['workflows/**/*.ts', 'activities/**/*.ts', 'client/**/*.ts', 'cli/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 100, skipBlankLines: false, skipComments: false, IIFEs: true }],
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        __dirname: 'readonly',
        console: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
