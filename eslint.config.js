import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The domain boundary: a folder under src/ is imported by others through its index.ts only.
 * (A domain's tables.ts may name another's table for a foreign key; drizzle-kit finds every
 * tables.ts by itself (drizzle.config.ts); the entry points at src/ level assemble everything.)
 */
const boundary = (depth) => {
  const up = '../'.repeat(depth);
  return {
    group: [`${up}*/*`, `!${up}*/index.js`, `${up}*/*/**`],
    message: 'Import another domain through its index.ts only (its public face), not its internals.',
  };
};
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
    ignores: ['src/*/tables.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [boundary(1), boundary(2)] }] },
  },
  {
    files: ['controllers/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [controllerBoundary] }] },
  },
);
