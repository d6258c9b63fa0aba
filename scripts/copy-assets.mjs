// Copies non-TypeScript runtime assets (SQL migrations) next to the compiled code.
import { chmodSync, cpSync } from 'node:fs';

cpSync('src/store/migrations', 'dist/src/store/migrations', { recursive: true });

// `npx hostplane` runs the bin directly, so it must be executable.
chmodSync('dist/src/cli/main.js', 0o755);
