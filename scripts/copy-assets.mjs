// Copies non-TypeScript runtime assets (SQL migrations) next to the compiled code, and packs the
// PGlite template (an initialised, migrated data folder) so a fresh `hostplane serve` skips initdb.
/* global console -- a Node global; the ESLint config has none for .mjs */
import { chmodSync, cpSync } from 'node:fs';

cpSync('src/store/migrations', 'dist/src/store/migrations', { recursive: true });

// `npx hostplane` runs the bin directly, so it must be executable.
chmodSync('dist/src/cli/main.js', 0o755);

// After the migrations are in place: the template is made by the compiled code's own migrate path.
const { buildTemplate } = await import('../dist/src/store/pglite-template-build.js');
const started = Date.now();
const template = await buildTemplate();
console.log(
  `PGlite template at ${template.migration}: ${(template.bytes / 1e6).toFixed(1)} MB in ${Date.now() - started} ms`,
);
