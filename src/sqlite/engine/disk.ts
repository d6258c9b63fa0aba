import { statfsSync } from 'node:fs';
import path from 'node:path';
import { SqliteEngineError } from './errors.js';

/**
 * Free space under which SQLITE_FULL is taken for the disk's fault rather than the size cap's: a
 * write that reached the cap's backstop (`max_page_count`) on a disk with room left is the
 * tenant's; one that found the disk (nearly) full is the server's.
 */
const LOW_DISK_BYTES = 64 * 1024 * 1024;

/** Whether the filesystem holding `filePath` has (nearly) no space left for a write. */
export function diskNearlyFull(filePath: string): boolean {
  try {
    const stats = statfsSync(path.dirname(filePath));
    return stats.bavail * stats.bsize < LOW_DISK_BYTES;
  } catch {
    return false;
  }
}

/** SQLITE_FULL from the disk: the server's fault, a 503 for the caller, nothing written. */
export function diskFullError(err: SqliteEngineError): SqliteEngineError {
  return new SqliteEngineError({
    ...err.toData(),
    kind: 'storage',
    message: 'The server has no disk space left for this write; nothing was written. Try again later.',
    retryAfterSeconds: 30,
  });
}
