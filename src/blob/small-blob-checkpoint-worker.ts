import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { CheckpointAnswer } from './small-blob-checkpoint.js';

/**
 * The small objects' checkpoint worker: on each message (the database file's path), a connection
 * of its own runs one passive checkpoint and is closed again (a connection per checkpoint: the
 * folder may have been removed and made again since the last one). Imports nothing of the
 * project's at run time, so it starts the same from dist/ and from the sources (tests).
 */
const { binding } = workerData as { binding: string };

parentPort!.on('message', (file: string) => {
  let answer: CheckpointAnswer;
  try {
    // fileMustExist: a folder removed under the store is not made again here.
    const db = new Database(file, { nativeBinding: binding, fileMustExist: true, timeout: 5_000 });
    try {
      const [row] = db.pragma('wal_checkpoint(PASSIVE)') as {
        busy: number;
        log: number;
        checkpointed: number;
      }[];
      answer = { ok: true, log: row?.log ?? 0, checkpointed: row?.checkpointed ?? 0 };
    } finally {
      db.close();
    }
  } catch (err) {
    answer = { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
  parentPort!.postMessage(answer);
});
