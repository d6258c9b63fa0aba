import { AppError } from '../errors/index.js';
import { normalizeSitePath } from '../files/index.js';

/** Extensions a database path ends with (spec 4.8). */
export const DATABASE_EXTENSIONS = ['.sqlite', '.db'] as const;

/** A database path: a valid site path ending in `.sqlite` or `.db`. */
export function normalizeDatabasePath(input: string): string {
  const path = normalizeSitePath(input, 'path', 'create');
  if (!DATABASE_EXTENSIONS.some((ext) => path.toLowerCase().endsWith(ext)))
    throw new AppError('INVALID_REQUEST', {
      message: 'path must end in .sqlite or .db (e.g. data/app.sqlite)',
    });
  return path;
}
