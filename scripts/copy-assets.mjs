// Copies non-TypeScript runtime assets (SQL migrations) next to the compiled code.
import { cpSync } from 'node:fs';

cpSync('src/store/migrations', 'dist/store/migrations', { recursive: true });
