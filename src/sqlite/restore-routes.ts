import { Router } from 'express';
import { z } from 'zod';
import { AppError, type ErrorCode } from '../errors/index.js';
import { databasePath } from '../files/index.js';
import { jsonBody, type RouteRegistry } from '../http/index.js';
import { planFor, siteForRequest, type Platform } from '../platform/index.js';
import { normalizeDatabasePath } from './db-path.js';
import type { ShardProxy } from './proxy.js';
import type { PointInTimeRestore } from './replication/point-in-time.js';
import type { SqliteDatabaseRow } from './tables.js';

// Point-in-time restore over the API (beyond the spec; Cloudflare D1's Time Travel is the model):
// the master key reads a database's restore window and restores it to a time within it, or back
// to the bookmark a restore answered. Both are served by the shard that owns the database.

const iso = z.iso.datetime();
const path = databasePath('Database path in the site, as installed (e.g. data/app.sqlite)');

export const restoreWindowQuery = z.strictObject({ path });
export const restoreWindowResponse = z.object({
  success: z.boolean(),
  path: z.string(),
  earliest: iso.nullable().describe('The earliest time a restore can reach (null: nothing replicated yet)'),
  latest: iso
    .nullable()
    .describe('When the latest replicated change was shipped (null: nothing replicated yet)'),
  retentionHours: z.int().describe('How long restore points are kept (HOSTPLANE_SQLITE_RETENTION_HOURS)'),
});

const timestamp = z.iso
  .datetime({ offset: true })
  .describe('ISO 8601 time to restore to, within the restore window (e.g. 2026-05-01T12:00:00Z)');
const bookmark = z
  .string()
  .min(1)
  .max(512)
  .describe('A previousBookmark a restore answered: restores the state just before that restore (undo)');
export const restoreBody = z.union([z.strictObject({ path, timestamp }), z.strictObject({ path, bookmark })]);
export const restoreResponse = z.object({
  success: z.boolean(),
  path: z.string(),
  restoredTo: iso.describe('The time whose state the database now holds'),
  version: z.int().describe('The database’s version after the restore: above every version before it'),
  previousBookmark: z.string().describe('Opaque: send it as `bookmark` to undo this restore'),
});

/** The master key's point-in-time restore routes. */
export function restoreRoutes(deps: {
  platform: Platform;
  proxy: ShardProxy;
  restores: PointInTimeRestore;
  registry: RouteRegistry;
}): Router {
  const { platform, proxy, restores, registry } = deps;
  const router = Router();
  const tags = ['SQLite restore'];
  const errors: ErrorCode[] = [
    'INVALID_PATH',
    'NOT_FOUND',
    'SQLITE_REPLICATION_OFF',
    'SQLITE_RESTORE_FAILED',
    'SQLITE_FORBIDDEN',
    'CAPACITY',
  ];

  /** The database the request names, in the key's site (404 when it has none there). */
  const databaseOf = async (req: Parameters<typeof siteForRequest>[0], input: string) => {
    const site = await siteForRequest(req, platform);
    const row = await restores.find(site.id, normalizeDatabasePath(input));
    if (!row) throw new AppError('NOT_FOUND', { message: 'This site has no SQLite database at this path.' });
    return row;
  };
  const maxBytesOf = async (row: SqliteDatabaseRow) =>
    planFor((await platform.accountContact(row.accountId))?.plan ?? 'free').maxSqliteBytes;

  registry.add(router, {
    method: 'get',
    path: '/api/v1/sqlite/restore-window',
    summary: 'The times a database can be restored to (point-in-time restore)',
    description:
      'From `earliest` (the oldest snapshot kept, within `retentionHours`) to now; `latest` is when the last change was shipped to the replica (about a second after it was written). ' +
      'Both are null while nothing is replicated yet. A restore starts a new history: afterwards the window starts at the restore, and earlier states are reached with the bookmark it answered. ' +
      'A database that is not replicated (no S3, or replication off) answers 409.',
    tags,
    auth: 'apiKey',
    errors,
    query: restoreWindowQuery,
    requestExample: { query: { path: 'data/app.sqlite' } },
    responses: {
      200: {
        description: 'The restore window',
        schema: restoreWindowResponse,
        example: {
          success: true,
          path: 'data/app.sqlite',
          earliest: '2026-05-01T09:00:01.000Z',
          latest: '2026-05-08T08:59:59.000Z',
          retentionHours: 168,
        },
      },
    },
    handler: async ({ req, res, query }) => {
      const row = await databaseOf(req, query.path);
      if (await proxy.sendTo(req, res, row)) return;
      const window = await restores.window(row);
      res.json({
        success: true,
        path: row.path,
        earliest: window.earliest?.toISOString() ?? null,
        latest: window.latest?.toISOString() ?? null,
        retentionHours: window.retentionHours,
      });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/restore',
    summary: 'Restore a database to a point in time, or undo a restore',
    description:
      'With `timestamp`: the database becomes what it was at that time (within the restore window; outside it is a 400 that names the window). With `bookmark`: it becomes what it was just before the restore that answered the bookmark (the undo). ' +
      'The swap is atomic and happens under the write lock: calls running on the database finish first, calls that arrive during the swap get 503 with Retry-After, later calls see the restored data. ' +
      '`version` is set above every version before the restore, so clients polling /version see a change. ' +
      'Scoped tokens, end users and their sessions are not part of the database file and are not changed. ' +
      'Keep `previousBookmark`: it is the only way back to the state the restore replaced.',
    tags,
    auth: 'apiKey',
    errors: [...errors, 'SQLITE_RESTORE_WINDOW', 'SQLITE_BOOKMARK_INVALID', 'CONFLICT'],
    middleware: [jsonBody('16kb')],
    body: restoreBody,
    requestExample: { body: { path: 'data/app.sqlite', timestamp: '2026-05-08T08:30:00Z' } },
    responses: {
      200: {
        description: 'Restored',
        schema: restoreResponse,
        example: {
          success: true,
          path: 'data/app.sqlite',
          restoredTo: '2026-05-08T08:30:00.000Z',
          version: 1043,
          previousBookmark:
            'eyJ2IjoxLCJkIjo3LCJnIjowLCJ0IjoiMjAyNi0wNS0wOFQwOTowMDowMC4wMDBaIn0.c2lnbmF0dXJl',
        },
        links: {
          UndoTheRestore: {
            to: { method: 'post', path: '/api/v1/sqlite/restore' },
            body: { path: '$response.body#/path', bookmark: '$response.body#/previousBookmark' },
          },
          TheRestoreWindow: {
            to: { method: 'get', path: '/api/v1/sqlite/restore-window' },
            parameters: { path: '$response.body#/path' },
          },
        },
      },
    },
    handler: async ({ req, res, body }) => {
      const row = await databaseOf(req, body.path);
      if (await proxy.sendTo(req, res, row, body)) return;
      const target =
        'timestamp' in body ? { timestamp: new Date(body.timestamp) } : { bookmark: body.bookmark };
      const outcome = await restores.restore(row, target, await maxBytesOf(row));
      res.json({
        success: true,
        path: row.path,
        restoredTo: outcome.restoredTo.toISOString(),
        version: outcome.version,
        previousBookmark: outcome.previousBookmark,
      });
    },
  });
  return router;
}
