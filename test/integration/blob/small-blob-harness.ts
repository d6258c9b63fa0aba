import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach } from 'vitest';
import { FsBlobStore } from '../../../src/blob/fs-blob-store.js';
import { SMALL_BLOB_DB_FILE } from '../../../src/blob/small-blob-db.js';
import { locateNativeParts } from '../../../src/config/index.js';
import { registry } from '../../../src/observability/index.js';

/** A counter's total over its labels, or over those whose `outcome` label is given (0 while none). */
export async function total(name: string, outcome?: string): Promise<number> {
  const metric = await registry.getSingleMetric(name)?.get();
  return (metric?.values ?? [])
    .filter((v) => outcome === undefined || v.labels.outcome === outcome)
    .reduce((sum, v) => sum + v.value, 0);
}

/**
 * A fresh blob folder per test (removed after it) and the stores and other connections opened on
 * it (closed after it). Call inside a describe().
 */
export function smallBlobFolder() {
  const folder = { root: '', file: '' };
  const opened: { close(): void }[] = [];
  beforeEach(async () => {
    folder.root = await mkdtemp(path.join(tmpdir(), 'hostplane-small-blobs-'));
    folder.file = path.join(folder.root, SMALL_BLOB_DB_FILE);
  });
  afterEach(async () => {
    for (const o of opened.splice(0)) o.close();
    await rm(folder.root, { recursive: true, force: true });
  });
  return {
    get root() {
      return folder.root;
    },
    get file() {
      return folder.file;
    },
    /** Another connection on the database (no busy wait: it fails at once when locked). */
    other(): Database.Database {
      const db = new Database(folder.file, { nativeBinding: locateNativeParts().binding, timeout: 0 });
      opened.push(db);
      return db;
    },
    store(options?: ConstructorParameters<typeof FsBlobStore>[1]): FsBlobStore {
      const s = new FsBlobStore(folder.root, options);
      opened.push(s);
      return s;
    },
  };
}
