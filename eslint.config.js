import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The domain boundary: a folder under src/ is imported by others through its index.ts only.
 * (A domain's tables.ts may name another's table for a foreign key, and src/store/schema.ts
 * gathers every tables.ts for drizzle; the composition root, src/server/, starts the controllers
 * through controllers/manager.ts.)
 */
const boundary = (depth) => {
  const up = '../'.repeat(depth);
  return {
    group: [`${up}*/*`, `!${up}*/index.js`, `${up}*/*/**`],
    message: 'Import another domain through its index.ts only (its public face), not its internals.',
  };
};

/**
 * The layers (DESIGN.md): the CLI on top, imported by nothing; the composition root (src/server/),
 * imported by the CLI only; the domains; the framework (src/http/), which knows no domain.
 */
const DOMAINS = ['platform', 'files', 'edge', 'publish', 'forms', 'sqlite', 'mail', 'ratelimit'];
const into = (folders, message) => ({ regex: `^(\\.\\./)+(${folders.join('|')})/`, message });
const intoCli = into(['cli'], 'Nothing imports the CLI: it is the top layer (argument parsing and clients).');
const intoServer = into(['server'], 'Only the CLI imports the composition root (src/server/).');
const intoDomain = into(
  DOMAINS,
  'The HTTP framework knows no domain: declare an interface in src/http/ and let the domain implement it.',
);
const srcRules = (...layers) => ({
  'no-restricted-imports': ['error', { patterns: [boundary(1), boundary(2), ...layers] }],
});

const controllerBoundary = {
  group: ['**/src/*/*', '!**/src/*/index.js', '**/src/*/*/**'],
  message: 'Controllers use src/ domains through their index.ts only.',
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', 'data/**', 'src/store/migrations/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/*/**/*.ts'],
    ignores: ['src/*/tables.ts', 'src/store/schema.ts'],
    rules: srcRules(intoCli, intoServer),
  },
  { files: ['src/cli/**/*.ts'], rules: srcRules() },
  { files: ['src/server/**/*.ts'], rules: srcRules(intoCli) },
  { files: ['src/http/**/*.ts'], rules: srcRules(intoCli, intoServer, intoDomain) },
  {
    files: ['controllers/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [controllerBoundary] }] },
  },
);
