import { isUtf8 } from 'node:buffer';
import { createHash, randomUUID } from 'node:crypto';
import { pipeline, Transform, type Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { and, eq, inArray, ne } from 'drizzle-orm';
import { blobKeyForHash, type BlobStore } from '../blob/index.js';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import type { Platform, SiteUsage, SiteEvents } from '../platform/index.js';
import type { Db, Tx } from '../store/index.js';
import { siteFiles, type SiteFileRow } from './tables.js';
import { contentTypeFor, isTextPath, specFileTypes, type FileTypes } from './file-types.js';
import { sweepOrphanBlobs, type SweepOptions } from './blob-sweep.js';
import { recountCounters } from './counters.js';
import {
  assertFolderLimit,
  BlobReclaimed,
  commitFileRow,
  readBeforeUpload,
  type BeforeUpload,
} from './commit-file.js';
import { blobClaimEventsTotal } from './metrics.js';
import { assertWithinQuota } from './quota.js';
import { ancestors, pathParts } from './paths.js';
import { HIDDEN_FILE_NAME, listFiles } from './listing.js';
export type { ListedEntry } from './listing.js';
import { assertNoDatabaseIn, databaseRefusal, registerDatabaseFile } from './database-files.js';
import { inFolder, moveFolderRows } from './folder-moves.js';
import { MAX_FILE_BYTES } from './limits.js';

export { MAX_FILE_BYTES, MAX_VIDEO_BYTES } from './limits.js';
/** Uploads at least this big ask the blob store whether it has the bytes before writing them. */
const HEAD_FIRST_MIN_BYTES = 256 * 1024;
/** A commit that finds its blob re-claimed writes the bytes again, at most this many times in all. */
const MAX_COMMIT_ATTEMPTS = 3;
const CLAIM_POLL_MS = 100;

export interface FileRecord {
  path: string;
  size: number;
  blobKey: string;
  contentType: string;
}

export interface StagedBlob {
  tmpKey: string;
  hash: string;
  size: number;
}

/** Files named .gitkeep are counted apart (never listed): +1/-1 for one such file, else 0. */
const hidden = (row: { kind: string; name: string }) =>
  row.kind === 'file' && row.name === HIDDEN_FILE_NAME ? 1 : 0;

/** The per-site file index and its bytes: every write is one transaction under the site's lock. */
export class FilesService {
  constructor(
    private readonly db: Db,
    private readonly blobs: BlobStore,
    private readonly platform: Platform,
    private readonly events: SiteEvents,
    private readonly upgradeUrl: string,
    /** The types this server accepts (the spec's and HOSTPLANE_EXTRA_FILE_TYPES): every upload path's check. */
    readonly types: FileTypes = specFileTypes,
  ) {}

  /** Runs a write under the site lock, then tells the edges the site changed (deploys.ts too). */
  async write<T>(siteId: number, operation: string, fn: (tx: Tx, usage: SiteUsage) => Promise<T>) {
    const result = await dbOp(operation, () =>
      this.db.transaction(async (tx) => fn(tx, await this.platform.lockUsage(tx, siteId))),
    );
    this.events.contentChanged(siteId);
    return result;
  }

  /** One page of the list, with the site's counters read in the same snapshot (see listFiles). */
  list(siteId: number, page: number, perPage: number) {
    return listFiles(this.db, siteId, page, perPage);
  }

  async find(siteId: number, sitePath: string): Promise<SiteFileRow | undefined> {
    return (await this.findAll(siteId, [sitePath]))[0];
  }

  /** The rows at these paths (those that exist), in one primary-key lookup. */
  findAll(siteId: number, sitePaths: string[]): Promise<SiteFileRow[]> {
    return dbOp('find_file', () =>
      this.db
        .select()
        .from(siteFiles)
        .where(and(eq(siteFiles.siteId, siteId), inArray(siteFiles.path, sitePaths))),
    );
  }

  /** Reads a file for the API: text as UTF-8, anything else (or text that is not UTF-8) as base64. */
  async read(
    siteId: number,
    sitePath: string,
  ): Promise<{ content: string; encoding: 'utf8' | 'base64'; size: number }> {
    const row = await this.find(siteId, sitePath);
    if (row?.kind === 'database') throw databaseRefusal(sitePath);
    if (!row || row.kind !== 'file' || !row.blobKey)
      throw new AppError('NOT_FOUND', { message: `File not found: ${sitePath}` });
    if (row.size > MAX_FILE_BYTES) {
      throw new AppError('FILE_TOO_LARGE', { maxBytes: MAX_FILE_BYTES, what: 'read' });
    }
    const bytes = await this.blobs.getBuffer(blobKeyForHash(row.blobKey));
    if (!bytes) throw new Error(`blob ${row.blobKey} of ${sitePath} is missing from the blob store`);
    return isTextPath(sitePath) && isUtf8(bytes)
      ? { content: bytes.toString('utf8'), encoding: 'utf8', size: row.size }
      : { content: bytes.toString('base64'), encoding: 'base64', size: row.size };
  }

  /** Stores bytes and records them at `sitePath`, creating parents, overwriting a file. */
  async upload(siteId: number, sitePath: string, bytes: Buffer): Promise<FileRecord> {
    const hash = createHash('sha256').update(bytes).digest('hex');
    const key = blobKeyForHash(hash);
    return this.storeAndCommit(siteId, sitePath, hash, bytes.length, {
      write: () => this.blobs.put(key, bytes),
      // Large bytes are often already there (content addressing): a HEAD may save the PUT.
      headFirst: bytes.length >= HEAD_FIRST_MIN_BYTES,
    });
  }

  /**
   * Streams bytes into a temporary blob (never whole in memory), hashing on the way. The caller
   * then commits the staged blob to a path with `commitStaged`, or drops it with `discardStaged`.
   */
  async stage(body: Readable): Promise<StagedBlob> {
    const tmpKey = `tmp/${randomUUID()}`;
    const hasher = createHash('sha256');
    const hashing = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hasher.update(chunk);
        done(null, chunk);
      },
    });
    // pipeline() forwards an error of the source (e.g. a body cut short) into the store's write.
    pipeline(body, hashing, () => undefined);
    try {
      const size = await this.blobs.putStream(tmpKey, hashing);
      return { tmpKey, hash: hasher.digest('hex'), size };
    } catch (err) {
      await this.blobs.delete(tmpKey).catch(() => undefined);
      throw err;
    }
  }

  async discardStaged(staged: StagedBlob): Promise<void> {
    await this.blobs.delete(staged.tmpKey);
  }

  async commitStaged(siteId: number, sitePath: string, staged: StagedBlob): Promise<FileRecord> {
    try {
      // A copy, not a move: should the commit have to write the blob again, the staged bytes are there.
      return await this.storeAndCommit(siteId, sitePath, staged.hash, staged.size, {
        write: () => this.blobs.copy(staged.tmpKey, blobKeyForHash(staged.hash)),
        headFirst: true,
      });
    } finally {
      await this.discardStaged(staged).catch(() => undefined);
    }
  }

  /**
   * Writes the blob with no transaction open, then records the file in one short transaction
   * under the site's lock. The blob's claim generation is read before the bytes are written; if a
   * sweeper claimed the blob since (see blob-claims.ts), the commit refuses and the bytes are
   * written again.
   */
  private async storeAndCommit(
    siteId: number,
    sitePath: string,
    hash: string,
    size: number,
    blob: { write: () => Promise<void>; headFirst: boolean },
  ): Promise<FileRecord> {
    const contentType = contentTypeFor(sitePath);
    for (let attempt = 1; ; attempt++) {
      // Usage first, then the path: a file committed in between is then seen at the path, so the
      // early check never counts a concurrent overwrite as a new file against the newer usage.
      const usage = await this.platform.getUsage(siteId);
      if (!usage) throw new AppError('NOT_FOUND', { message: 'Site not found' });
      const before = await this.readUnclaimed(siteId, sitePath, hash);
      // A cheap early refusal before bytes are written; the binding check is in the commit.
      assertWithinQuota(usage, this.upgradeUrl, before.exists ? 0 : 1, size - before.existingSize);
      if (!(blob.headFirst && (await this.blobs.head(blobKeyForHash(hash))))) await blob.write();
      try {
        return await this.write(siteId, 'commit_file', async (tx, locked) => {
          const input = { siteId, sitePath, hash, size, contentType, generation: before.generation };
          await this.platform.recordChange(
            tx,
            siteId,
            await commitFileRow(tx, locked, this.upgradeUrl, input),
          );
          return { path: sitePath, size, blobKey: hash, contentType };
        });
      } catch (err) {
        if (!(err instanceof BlobReclaimed) || attempt >= MAX_COMMIT_ATTEMPTS) throw err;
        blobClaimEventsTotal.inc({ event: 'upload_rewrote' });
      }
    }
  }

  /** What is at the path and the blob's claim state, once no sweeper holds a live claim on it. */
  private async readUnclaimed(siteId: number, sitePath: string, hash: string): Promise<BeforeUpload> {
    let waited = false;
    for (;;) {
      const before = await dbOp('read_before_upload', () =>
        readBeforeUpload(this.db, siteId, sitePath, hash),
      );
      if (!before.claimed) return before;
      // A sweeper is deleting these very bytes: write them after it is done (at most its lease).
      if (!waited) blobClaimEventsTotal.inc({ event: 'upload_waited' });
      waited = true;
      await delay(CLAIM_POLL_MS);
    }
  }

  private async rowAt(tx: Tx, siteId: number, sitePath: string): Promise<SiteFileRow | undefined> {
    const [row] = await tx
      .select()
      .from(siteFiles)
      .where(and(eq(siteFiles.siteId, siteId), eq(siteFiles.path, sitePath)));
    return row;
  }

  private async assertNoFileAncestor(tx: Tx, siteId: number, sitePath: string): Promise<void> {
    const parents = ancestors(sitePath);
    if (parents.length === 0) return;
    const [file] = await tx
      .select({ path: siteFiles.path })
      .from(siteFiles)
      .where(
        and(eq(siteFiles.siteId, siteId), ne(siteFiles.kind, 'folder'), inArray(siteFiles.path, parents)),
      )
      .limit(1);
    if (file)
      throw new AppError('CONFLICT', { message: `${file.path} is a file, so it cannot contain ${sitePath}` });
  }

  /**
   * Creates missing folders, within the plan's folder limit (see assertFolderLimit); returns how
   * many it created, for the caller to record. Counts against the folder count the caller's lock
   * read, so the caller must not have changed the site's folders before in its transaction.
   */
  private async createFolders(tx: Tx, usage: SiteUsage, folders: string[]): Promise<number> {
    if (folders.length === 0) return 0;
    const siteId = usage.site.id;
    const created = await tx
      .insert(siteFiles)
      .values(
        folders.map((folder) => ({ siteId, path: folder, kind: 'folder' as const, ...pathParts(folder) })),
      )
      .onConflictDoNothing()
      .returning({ path: siteFiles.path });
    assertFolderLimit(usage, this.upgradeUrl, created.length, usage.site.folderCount);
    return created.length;
  }

  async rename(siteId: number, oldPath: string, newPath: string): Promise<void> {
    await this.write(siteId, 'rename_file', async (tx, usage) => {
      const source = await this.rowAt(tx, siteId, oldPath);
      if (source?.kind === 'database') throw databaseRefusal(oldPath);
      if (!source || source.kind !== 'file')
        throw new AppError('NOT_FOUND', { message: `File not found: ${oldPath}` });
      if (oldPath === newPath) return;
      if (await this.rowAt(tx, siteId, newPath))
        throw new AppError('CONFLICT', { message: `Something already exists at ${newPath}` });
      await this.assertNoFileAncestor(tx, siteId, newPath);
      await tx
        .update(siteFiles)
        .set({
          path: newPath,
          ...pathParts(newPath),
          contentType: contentTypeFor(newPath),
          updatedAt: new Date(),
        })
        .where(and(eq(siteFiles.siteId, siteId), eq(siteFiles.path, oldPath)));
      const folders = await this.createFolders(tx, usage, ancestors(newPath));
      const hiddenFiles = hidden({ kind: 'file', name: pathParts(newPath).name }) - hidden(source);
      await this.platform.recordChange(tx, siteId, { folders, hiddenFiles });
    });
  }

  async delete(siteId: number, sitePath: string): Promise<void> {
    await this.write(siteId, 'delete_file', async (tx) => {
      if ((await this.rowAt(tx, siteId, sitePath))?.kind === 'database') throw databaseRefusal(sitePath);
      const [row] = await tx
        .delete(siteFiles)
        .where(and(eq(siteFiles.siteId, siteId), eq(siteFiles.path, sitePath), eq(siteFiles.kind, 'file')))
        .returning();
      if (!row) throw new AppError('NOT_FOUND', { message: `File not found: ${sitePath}` });
      await this.platform.recordChange(tx, siteId, {
        files: -1,
        bytes: -row.size,
        hiddenFiles: -hidden(row),
      });
    });
  }

  /** Creates a folder and its parents; true when it was new. */
  async createFolder(siteId: number, folderPath: string): Promise<boolean> {
    return this.write(siteId, 'create_folder', async (tx, usage) => {
      const existing = await this.rowAt(tx, siteId, folderPath);
      if (existing?.kind === 'database') throw databaseRefusal(folderPath);
      if (existing?.kind === 'file')
        throw new AppError('CONFLICT', { message: `A file already exists at ${folderPath}` });
      if (existing) return false;
      await this.assertNoFileAncestor(tx, siteId, folderPath);
      const folders = await this.createFolders(tx, usage, [...ancestors(folderPath), folderPath]);
      await this.platform.recordChange(tx, siteId, { folders });
      return true;
    });
  }

  /** Moves a folder and everything in it; returns how many files moved. */
  async renameFolder(siteId: number, oldPath: string, newPath: string): Promise<number> {
    return this.write(siteId, 'rename_folder', async (tx, usage) => {
      const source = await this.rowAt(tx, siteId, oldPath);
      if (!source || source.kind !== 'folder')
        throw new AppError('NOT_FOUND', { message: `Folder not found: ${oldPath}` });
      // A clash with the folder itself, as a file renamed onto its own path is (the request is
      // well-formed; the folder's own place makes it impossible).
      if (newPath === oldPath)
        throw new AppError('CONFLICT', { message: 'new_path is the same as old_path' });
      if (newPath.startsWith(`${oldPath}/`))
        throw new AppError('CONFLICT', { message: 'A folder cannot be moved into itself' });
      await assertNoDatabaseIn(tx, siteId, oldPath);
      const [clash] = await tx
        .select({ path: siteFiles.path })
        .from(siteFiles)
        .where(inFolder(siteId, newPath))
        .limit(1);
      if (clash) throw new AppError('CONFLICT', { message: `Something already exists at ${newPath}` });
      await this.assertNoFileAncestor(tx, siteId, newPath);
      const moved = await moveFolderRows(tx, siteId, oldPath, newPath, pathParts(newPath));
      const folders = await this.createFolders(tx, usage, ancestors(newPath));
      await this.platform.recordChange(tx, siteId, { folders });
      return moved;
    });
  }

  /** Deletes a folder and everything in it; returns how many files went. */
  async deleteFolder(siteId: number, folderPath: string): Promise<number> {
    return this.write(siteId, 'delete_folder', async (tx) => {
      const source = await this.rowAt(tx, siteId, folderPath);
      if (!source || source.kind !== 'folder')
        throw new AppError('NOT_FOUND', { message: `Folder not found: ${folderPath}` });
      await assertNoDatabaseIn(tx, siteId, folderPath);
      const rows = await tx.delete(siteFiles).where(inFolder(siteId, folderPath)).returning();
      const files = rows.filter((r) => r.kind === 'file');
      const bytes = files.reduce((sum, r) => sum + r.size, 0);
      const folders = rows.length - files.length;
      const hiddenFiles = files.reduce((sum, r) => sum + hidden(r), 0);
      await this.platform.recordChange(tx, siteId, {
        files: -files.length,
        bytes: -bytes,
        folders: -folders,
        hiddenFiles: -hiddenFiles,
      });
      return files.length;
    });
  }

  /** Records a SQLite database at `path` (counted as a file, no bytes); false when it was there. */
  registerDatabase(siteId: number, path: string): Promise<boolean> {
    return this.write(siteId, 'register_database', async (tx, usage) => {
      const added = await registerDatabaseFile(tx, usage, path, this.upgradeUrl, (t, u, f) =>
        this.createFolders(t, u, f),
      );
      if (added) await this.platform.recordChange(tx, siteId, { files: 1, folders: added.foldersCreated });
      return added !== null;
    });
  }

  /** Takes back a registration (an install that failed after it). */
  unregisterDatabase(siteId: number, path: string): Promise<void> {
    return this.write(siteId, 'unregister_database', async (tx) => {
      const gone = await tx
        .delete(siteFiles)
        .where(and(eq(siteFiles.siteId, siteId), eq(siteFiles.path, path), eq(siteFiles.kind, 'database')))
        .returning({ path: siteFiles.path });
      if (gone.length > 0) await this.platform.recordChange(tx, siteId, { files: -1 });
    });
  }

  /** Deletes staged uploads and blobs no file references, older than `graceMs` (see blob-sweep.ts). */
  sweepOrphanBlobs(graceMs: number, options?: SweepOptions): Promise<number> {
    return sweepOrphanBlobs(this.db, this.blobs, graceMs, options);
  }

  /** Recounts the file counters of `batch` sites, correcting wrong ones (see counters.ts). */
  async recountCounters(batch: number): Promise<number> {
    const corrected = await recountCounters(this.db, this.platform, batch);
    for (const siteId of corrected) this.events.contentChanged(siteId);
    return corrected.length;
  }
}
