import { isUtf8 } from 'node:buffer';
import { createHash, randomUUID } from 'node:crypto';
import { pipeline, Transform, type Readable } from 'node:stream';
import { and, asc, count, desc, eq, inArray, ne, or, sql } from 'drizzle-orm';
import { blobKeyForHash, type BlobStore } from '../blob/index.js';
import { AppError } from '../errors/index.js';
import { dbOp, quotaRejectionsTotal } from '../observability/index.js';
import type { Platform, SiteUsage, SiteEvents } from '../platform/index.js';
import type { Db } from '../store/index.js';
import { siteFiles, type SiteFileRow } from './tables.js';
import { contentTypeFor, isTextPath } from './file-types.js';
import { lockBlob, sweepOrphanBlobs } from './blob-sweep.js';
import { assertWithinQuota } from './quota.js';
import { ancestors, pathParts } from './paths.js';

export const MAX_FILE_BYTES = 10 * 1024 * 1024;
export const MAX_VIDEO_BYTES = 50 * 1024 * 1024;

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

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

export interface ListedEntry {
  path: string;
  name: string;
  type: 'file' | 'folder';
  size: number;
  parent: string | null;
  depth: number;
}

const startsWith = (column: typeof siteFiles.path, prefix: string) => sql`starts_with(${column}, ${prefix})`;

/** The per-site file index and its bytes: every write is one transaction under the site's lock. */
export class FilesService {
  constructor(
    private readonly db: Db,
    private readonly blobs: BlobStore,
    private readonly platform: Platform,
    private readonly events: SiteEvents,
    private readonly upgradeUrl: string,
  ) {}

  /** Runs a write under the site lock, then tells the edges the site changed. */
  private async write<T>(siteId: number, operation: string, fn: (tx: Tx, usage: SiteUsage) => Promise<T>) {
    const result = await dbOp(operation, () =>
      this.db.transaction(async (tx) => fn(tx, await this.platform.lockUsage(tx, siteId))),
    );
    this.events.changed(siteId);
    return result;
  }

  async list(
    siteId: number,
    page: number,
    perPage: number,
  ): Promise<{ total: number; entries: ListedEntry[] }> {
    // Files named .gitkeep are hidden (spec 2.1); a folder of that name is listed like any other.
    const visible = and(
      eq(siteFiles.siteId, siteId),
      or(ne(siteFiles.kind, 'file'), ne(siteFiles.name, '.gitkeep')),
    );
    return dbOp('list_files', async () => {
      const [totals] = await this.db.select({ total: count() }).from(siteFiles).where(visible);
      const rows = await this.db
        .select()
        .from(siteFiles)
        .where(visible)
        .orderBy(
          asc(siteFiles.depth),
          desc(sql`${siteFiles.kind} = 'folder'`),
          // Byte order (COLLATE "C"), so the order does not depend on the server's locale.
          asc(sql`lower(${siteFiles.name}) collate "C"`),
          asc(sql`${siteFiles.name} collate "C"`),
          // Names repeat across folders: the path breaks ties, so pages neither repeat nor skip rows.
          asc(sql`${siteFiles.path} collate "C"`),
        )
        .limit(perPage)
        .offset((page - 1) * perPage);
      return {
        total: totals?.total ?? 0,
        entries: rows.map((r) => ({
          path: r.path,
          name: r.name,
          type: r.kind,
          size: r.kind === 'file' ? r.size : 0,
          parent: r.parent,
          depth: r.depth,
        })),
      };
    });
  }

  async find(siteId: number, sitePath: string): Promise<SiteFileRow | undefined> {
    const [row] = await dbOp('find_file', () =>
      this.db
        .select()
        .from(siteFiles)
        .where(and(eq(siteFiles.siteId, siteId), eq(siteFiles.path, sitePath))),
    );
    return row;
  }

  /** Reads a file for the API: text as UTF-8, anything else (or text that is not UTF-8) as base64. */
  async read(
    siteId: number,
    sitePath: string,
  ): Promise<{ content: string; encoding: 'utf8' | 'base64'; size: number }> {
    const row = await this.find(siteId, sitePath);
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
    await this.assertQuotaBeforeBytes(siteId, sitePath, bytes.length);
    await this.blobs.put(blobKeyForHash(hash), bytes);
    return this.commitFile(siteId, sitePath, hash, bytes.length, bytes);
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
      await this.assertQuotaBeforeBytes(siteId, sitePath, staged.size);
      await this.blobs.move(staged.tmpKey, blobKeyForHash(staged.hash));
    } catch (err) {
      await this.discardStaged(staged).catch(() => undefined);
      throw err;
    }
    return this.commitFile(siteId, sitePath, staged.hash, staged.size);
  }

  /** A cheap early refusal before bytes are written; the binding check is in commitFile. */
  private async assertQuotaBeforeBytes(siteId: number, sitePath: string, size: number): Promise<void> {
    const usage = await this.platform.getUsage(siteId);
    if (!usage) throw new AppError('NOT_FOUND', { message: 'Site not found' });
    const existing = await this.find(siteId, sitePath);
    const filesDelta = existing ? 0 : 1;
    assertWithinQuota(usage, this.upgradeUrl, filesDelta, size - (existing?.size ?? 0));
  }

  private async commitFile(
    siteId: number,
    sitePath: string,
    hash: string,
    size: number,
    /** The bytes, when the caller still has them: re-written if the sweeper took the blob meanwhile. */
    bytes?: Buffer,
  ): Promise<FileRecord> {
    const contentType = contentTypeFor(sitePath);
    return this.write(siteId, 'commit_file', async (tx, usage) => {
      // Under the blob's lock the sweeper cannot delete it between this check and the commit.
      await lockBlob(tx, hash);
      if (!(await this.blobs.head(blobKeyForHash(hash)))) {
        if (!bytes) throw new Error(`blob ${hash} vanished before its file was recorded`);
        await this.blobs.put(blobKeyForHash(hash), bytes);
      }
      const existing = await this.rowAt(tx, siteId, sitePath);
      if (existing?.kind === 'folder')
        throw new AppError('CONFLICT', { message: `A folder already exists at ${sitePath}` });
      await this.assertNoFileAncestor(tx, siteId, sitePath);
      const filesDelta = existing ? 0 : 1;
      const bytesDelta = size - (existing?.size ?? 0);
      assertWithinQuota(usage, this.upgradeUrl, filesDelta, bytesDelta);
      const parts = pathParts(sitePath);
      await tx
        .insert(siteFiles)
        .values({ siteId, path: sitePath, kind: 'file', ...parts, size, blobKey: hash, contentType })
        .onConflictDoUpdate({
          target: [siteFiles.siteId, siteFiles.path],
          set: { size, blobKey: hash, contentType, updatedAt: new Date() },
        });
      await this.createFolders(tx, usage, ancestors(sitePath));
      await this.platform.recordChange(tx, siteId, filesDelta, bytesDelta);
      return { path: sitePath, size, blobKey: hash, contentType };
    });
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
      .where(and(eq(siteFiles.siteId, siteId), eq(siteFiles.kind, 'file'), inArray(siteFiles.path, parents)))
      .limit(1);
    if (file)
      throw new AppError('CONFLICT', { message: `${file.path} is a file, so it cannot contain ${sitePath}` });
  }

  /**
   * Creates missing folders. Folders are not files for the quota, but a site may hold at most as
   * many folders as its plan allows files, so folder rows cannot grow without bound.
   */
  private async createFolders(tx: Tx, usage: SiteUsage, folders: string[]): Promise<void> {
    if (folders.length === 0) return;
    const siteId = usage.site.id;
    const created = await tx
      .insert(siteFiles)
      .values(
        folders.map((folder) => ({ siteId, path: folder, kind: 'folder' as const, ...pathParts(folder) })),
      )
      .onConflictDoNothing()
      .returning({ path: siteFiles.path });
    const limit = usage.plan.maxFiles;
    if (created.length === 0 || limit === null) return;
    const [row] = await tx
      .select({ folders: count() })
      .from(siteFiles)
      .where(and(eq(siteFiles.siteId, siteId), eq(siteFiles.kind, 'folder')));
    const folderCount = row?.folders ?? 0;
    if (folderCount > limit) {
      quotaRejectionsTotal.inc({ limit: 'folders' });
      throw new AppError('FOLDER_LIMIT', {
        message: `Your ${usage.plan.name} plan allows ${limit} folders per site. Delete folders or upgrade your plan.`,
        current: folderCount - created.length,
        limit,
        plan: usage.plan.type,
        upgradeUrl: this.upgradeUrl,
      });
    }
  }

  async rename(siteId: number, oldPath: string, newPath: string): Promise<void> {
    await this.write(siteId, 'rename_file', async (tx, usage) => {
      const source = await this.rowAt(tx, siteId, oldPath);
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
      await this.createFolders(tx, usage, ancestors(newPath));
      await this.platform.recordChange(tx, siteId, 0, 0);
    });
  }

  async delete(siteId: number, sitePath: string): Promise<void> {
    await this.write(siteId, 'delete_file', async (tx) => {
      const [row] = await tx
        .delete(siteFiles)
        .where(and(eq(siteFiles.siteId, siteId), eq(siteFiles.path, sitePath), eq(siteFiles.kind, 'file')))
        .returning();
      if (!row) throw new AppError('NOT_FOUND', { message: `File not found: ${sitePath}` });
      await this.platform.recordChange(tx, siteId, -1, -row.size);
    });
  }

  /** Creates a folder and its parents; true when it was new. */
  async createFolder(siteId: number, folderPath: string): Promise<boolean> {
    return this.write(siteId, 'create_folder', async (tx, usage) => {
      const existing = await this.rowAt(tx, siteId, folderPath);
      if (existing?.kind === 'file')
        throw new AppError('CONFLICT', { message: `A file already exists at ${folderPath}` });
      if (existing) return false;
      await this.assertNoFileAncestor(tx, siteId, folderPath);
      await this.createFolders(tx, usage, [...ancestors(folderPath), folderPath]);
      await this.platform.recordChange(tx, siteId, 0, 0);
      return true;
    });
  }

  private inFolder(siteId: number, folderPath: string) {
    return and(
      eq(siteFiles.siteId, siteId),
      or(eq(siteFiles.path, folderPath), startsWith(siteFiles.path, `${folderPath}/`)),
    );
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
      const [clash] = await tx
        .select({ path: siteFiles.path })
        .from(siteFiles)
        .where(this.inFolder(siteId, newPath))
        .limit(1);
      if (clash) throw new AppError('CONFLICT', { message: `Something already exists at ${newPath}` });
      await this.assertNoFileAncestor(tx, siteId, newPath);
      const rows = await tx.delete(siteFiles).where(this.inFolder(siteId, oldPath)).returning();
      const moved = rows.map((row) => {
        const path = newPath + row.path.slice(oldPath.length);
        return {
          ...row,
          path,
          ...pathParts(path),
          contentType: row.kind === 'file' ? contentTypeFor(path) : null,
        };
      });
      for (let i = 0; i < moved.length; i += 500) await tx.insert(siteFiles).values(moved.slice(i, i + 500));
      await this.createFolders(tx, usage, ancestors(newPath));
      await this.platform.recordChange(tx, siteId, 0, 0);
      return rows.filter((r) => r.kind === 'file').length;
    });
  }

  /** Deletes a folder and everything in it; returns how many files went. */
  async deleteFolder(siteId: number, folderPath: string): Promise<number> {
    return this.write(siteId, 'delete_folder', async (tx) => {
      const source = await this.rowAt(tx, siteId, folderPath);
      if (!source || source.kind !== 'folder')
        throw new AppError('NOT_FOUND', { message: `Folder not found: ${folderPath}` });
      const rows = await tx.delete(siteFiles).where(this.inFolder(siteId, folderPath)).returning();
      const files = rows.filter((r) => r.kind === 'file');
      const bytes = files.reduce((sum, r) => sum + r.size, 0);
      await this.platform.recordChange(tx, siteId, -files.length, -bytes);
      return files.length;
    });
  }

  /** Deletes staged uploads and blobs no file references, older than `graceMs` (see blob-sweep.ts). */
  sweepOrphanBlobs(graceMs: number): Promise<number> {
    return sweepOrphanBlobs(this.db, this.blobs, graceMs);
  }
}
