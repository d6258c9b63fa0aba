import { existsSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';

/**
 * A checkpoint worker that fails while `<database file>.fail` exists (a test's switch) and is the
 * real one otherwise: it loads the real worker with its message handler wrapped in one that
 * throws first, which ends the worker with an error as any exception in it would. Passed as the
 * store's `checkpointWorker`.
 */
const port = parentPort!;
const on = port.on.bind(port);
port.on = ((event: string, listener: (file: string) => void) =>
  on(event, (file: string) => {
    if (event === 'message' && existsSync(`${file}.fail`)) {
      throw new Error('checkpoint worker failure (injected by the test)');
    }
    listener(file);
  })) as typeof port.on;
const real = '../../../src/blob/small-blob-checkpoint-worker.ts';
await import(real);
