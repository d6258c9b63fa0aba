import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Which module may import which (the layers, the domains' faces, no circles) is checked by
// dependency-cruiser: see .dependency-cruiser.cjs (`npm run layers`, part of `npm run lint`).
export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', 'data/**', 'src/store/migrations/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs', globals: { module: 'writable' } } },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
);
