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

/** The rule for the files `depth` folders below the project root in `folder` (relative paths climb `depth` levels to leave it). */
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
    // Deterministic code: its own modules, the contracts, and the workflow SDK (with its streams'
    // workflow side). Nothing else, not even types.
    patterns.push({
      regex: `^(?!\\./|${up}common/|@temporalio/workflow$|@temporalio/workflow-streams/workflow$)`,
      message:
        'workflows/ import only ./, ../common/, @temporalio/workflow and @temporalio/workflow-streams/workflow: workflow code must stay deterministic',
    });
  }
  const files = [`${folder}/${'*/'.repeat(depth - 1)}*.ts`];
  return { files, rules: { 'no-restricted-imports': ['error', { patterns }] } };
}

const layerRules = Object.keys(MAY_IMPORT)
  .filter((folder) => folder !== 'test')
  .flatMap((folder) => [1, 2, 3, 4].map((depth) => layerRule(folder, depth)));

module.exports = tseslint.config(
  {
    ignores: ['node_modules/**', '.data/**', '.tools/**', 'examples/**', 'bench/results/**', 'dist/**', 'coverage/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  ...layerRules,
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
