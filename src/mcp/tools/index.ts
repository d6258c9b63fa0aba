import type { Tool } from '../tool.js';
import { deployTools } from './deploys.js';
import { fileTools } from './files.js';
import { formTools } from './forms.js';
import { publishTools } from './publish.js';
import { sqliteTools } from './sqlite.js';
import { usageTools } from './usage.js';

/** Every tool, in the order they are listed (grouped by feature). */
export const allTools: readonly Tool[] = [
  ...publishTools,
  ...deployTools,
  ...fileTools,
  ...formTools,
  ...sqliteTools,
  ...usageTools,
];
