import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { ApiUnavailable } from '../errors.js';
import { Throttled, type BlobBody, type DeployApi } from './api.js';
import type { ManifestFile } from './hash.js';

export interface UploadPlan {
  /** One file per required hash (files with the same bytes upload once). */
  files: ManifestFile[];
  bytes: number;
}

/** The files whose bytes the server asked for, one per hash. */
export function planUploads(manifest: ManifestFile[], required: string[]): UploadPlan {
  const byHash = new Map<string, ManifestFile>();
  for (const file of manifest) if (!byHash.has(file.hash)) byHash.set(file.hash, file);
  const files: ManifestFile[] = [];
  for (const hash of required) {
    const file = byHash.get(hash);
    // The server only asks for hashes of the manifest it was sent.
    if (!file) throw new Error(`the server asked for ${hash}, which no file of this folder has`);
    files.push(file);
  }
  return { files, bytes: files.reduce((sum, f) => sum + f.size, 0) };
}

/** Files up to this size are read whole (cheaper per request); larger ones stream from disk. */
const READ_WHOLE_MAX_BYTES = 1024 * 1024;

async function bodyOf(file: ManifestFile): Promise<BlobBody> {
  if (file.size <= READ_WHOLE_MAX_BYTES) return { bytes: await readFile(file.absPath) };
  return {
    stream: () => Readable.toWeb(createReadStream(file.absPath)) as ReadableStream<Uint8Array>,
    length: file.size,
  };
}

/** A file refused with 429 this many times in a row fails the deploy (exit 5). */
const MAX_THROTTLES_PER_FILE = 20;

/**
 * PUTs each file of the plan, at most `concurrency` at once. The server admits uploads by the bytes
 * they may hold in memory (a share of its budget per site, per process; src/http/upload-admission.ts)
 * and answers 429 (the site's share) or 503 (the process's budget) beyond it: on a 429 the window
 * shrinks to what it accepted and the refused file waits its Retry-After and goes again, so a deploy
 * of large files paces itself instead of failing. Other transient failures are retried per
 * call (api.ts). The first failure that could not be fixed stops new uploads and is thrown.
 */
export async function uploadAll(
  api: DeployApi,
  deployId: string,
  plan: UploadPlan,
  concurrency: number,
  events: { uploaded(file: ManifestFile): void; paced(window: number, reason: string): void },
): Promise<{ window: number }> {
  const queue = [...plan.files];
  const throttles = new Map<string, number>();
  let window = concurrency;
  let active = 0;
  let failed: unknown;
  let wake: () => void = () => undefined;

  let waiting = 0;
  const release = () => {
    active--;
    wake();
  };

  const uploadOne = async (file: ManifestFile) => {
    try {
      await api.put(`/api/v1/deploys/${deployId}/files/${file.hash}`, await bodyOf(file));
    } catch (err) {
      if (!(err instanceof Throttled)) {
        failed ??= err;
        return release();
      }
      const times = (throttles.get(file.hash) ?? 0) + 1;
      throttles.set(file.hash, times);
      if (times > MAX_THROTTLES_PER_FILE) {
        failed ??= new ApiUnavailable(`PUT of ${file.sitePath}: ${err.message} (${times} times)`);
        return release();
      }
      // The others in flight were accepted: that many is what the server takes now.
      const accepted = Math.max(1, active - 1);
      if (accepted < window) {
        window = accepted;
        events.paced(window, err.message);
      }
      // Waiting holds none of the server's upload budget: the window goes on with the others meanwhile.
      waiting++;
      release();
      await delay(err.waitMs);
      waiting--;
      queue.unshift(file);
      return wake();
    }
    throttles.delete(file.hash);
    events.uploaded(file);
    release();
  };

  const running = new Set<Promise<void>>();
  while (failed === undefined && (queue.length > 0 || active > 0 || waiting > 0)) {
    while (failed === undefined && queue.length > 0 && active < window) {
      active++;
      const task = uploadOne(queue.shift()!);
      running.add(task);
      void task.finally(() => running.delete(task));
    }
    await new Promise<void>((resolve) => (wake = resolve));
  }
  await Promise.all(running);
  if (failed !== undefined) throw failed;
  return { window };
}
