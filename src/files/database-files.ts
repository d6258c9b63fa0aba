import { and, eq } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import type { Tx } from '../store/index.js';
import type { SiteUsage } from '../platform/index.js';
import { ancestors, pathParts } from './paths.js';
import { assertWithinQuota } from './quota.js';
import { inFolder } from './folder-moves.js';
import { siteFiles } from './tables.js';

/**
 * A SQLite database is a file of its site (spec 8: it counts toward the file count, not the
 * storage quota): listed, with no URL, never served, and changed only through the SQLite API.
 */
export function databaseRefusal(path: string): AppError {
  return new AppError('CONFLICT', {
    message: `${path} is a SQLite database: it is read, written and kept through the SQLite API, not the files API`,
  });
}

/**
 * Adds the database's entry (and its missing folders) under the site lock the caller holds.
 * Returns null when the database was already there, else how many folders it created; refuses a
 * file or folder at the path, a file among its parents, and a site at its file limit.
 */
export async function registerDatabaseFile(
  tx: Tx,
  usage: SiteUsage,
  path: string,
  upgradeUrl: string,
  createFolders: (tx: Tx, usage: SiteUsage, folders: string[]) => Promise<number>,
): Promise<{ foldersCreated: number } | null> {
  const siteId = usage.site.id;
  const [existing] = await tx
    .select({ kind: siteFiles.kind })
    .from(siteFiles)
    .where(and(eq(siteFiles.siteId, siteId), eq(siteFiles.path, path)));
  if (existing?.kind === 'database') return null;
  if (existing) throw new AppError('CONFLICT', { message: `A ${existing.kind} already exists at ${path}` });
  for (const parent of ancestors(path)) {
    const [row] = await tx
      .select({ kind: siteFiles.kind })
      .from(siteFiles)
      .where(and(eq(siteFiles.siteId, siteId), eq(siteFiles.path, parent)));
    if (row && row.kind !== 'folder')
      throw new AppError('CONFLICT', { message: `${parent} is a file, so it cannot contain ${path}` });
  }
  assertWithinQuota(usage, upgradeUrl, 1, 0);
  await tx.insert(siteFiles).values({
    siteId,
    path,
    kind: 'database',
    ...pathParts(path),
    size: 0,
    contentType: 'application/vnd.sqlite3',
  });
  return { foldersCreated: await createFolders(tx, usage, ancestors(path)) };
}

/** SQLite databases move and go through the SQLite API only: a folder holding one stays put. */
export async function assertNoDatabaseIn(tx: Tx, siteId: number, folderPath: string): Promise<void> {
  const [database] = await tx
    .select({ path: siteFiles.path })
    .from(siteFiles)
    .where(and(inFolder(siteId, folderPath), eq(siteFiles.kind, 'database')))
    .limit(1);
  if (database) throw databaseRefusal(database.path);
}
