import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { ApiRefused, ApiUnavailable } from '../errors.js';
import { Throttled, type BlobBody, type DeployApi } from './api.js';
import { BULK_FILE_MAX_BYTES, bucketsOf, multipartOf } from './bulk.js';
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

/** Files sent by their own PUT (over BULK_FILE_MAX_BYTES) stream from disk. */
function bodyOf(file: ManifestFile): BlobBody {
  return {
    stream: () => createReadStream(file.absPath),
    length: file.size,
  };
}

/** A file or bucket refused with 429 this many times in a row fails the deploy (exit 5). */
const MAX_THROTTLES_PER_FILE = 20;

/** One request: a bucket of small files (bulk upload) or one large file (PUT). */
interface Unit {
  files: ManifestFile[];
  bulk: boolean;
  key: string;
}

/** Buckets of the small files first (most files go there), then each large file alone. */
export function unitsOf(files: ManifestFile[]): Unit[] {
  const small = files.filter((f) => f.size <= BULK_FILE_MAX_BYTES);
  const large = files.filter((f) => f.size > BULK_FILE_MAX_BYTES);
  return [
    ...bucketsOf(small).map((b) => ({ files: b, bulk: true, key: `bucket:${b[0]!.hash}` })),
    ...large.map((f) => ({ files: [f], bulk: false, key: f.hash })),
  ];
}

/** An API without the bulk route (an older server): 404 "No route for POST …". */
const noBulkRoute = (err: unknown) =>
  err instanceof ApiRefused && err.status === 404 && /^No route/.test(err.body.message);

/**
 * Sends the plan: small files in buckets (one multipart request each, bulk.ts), large ones by PUT,
 * at most `concurrency` requests at once. The server admits uploads by the bytes they may hold in
 * memory (a share of its budget per site, per process; src/http/upload-admission.ts) and answers
 * 429 (the site's share) or 503 (the process's budget) beyond it: on a 429 the window shrinks to
 * what it accepted and the refused request waits its Retry-After and goes again, so a deploy of
 * large files paces itself instead of failing. Other transient failures are retried per call
 * (api.ts). The first failure that could not be fixed stops new uploads and is thrown.
 */
export async function uploadAll(
  api: DeployApi,
  deployId: string,
  plan: UploadPlan,
  concurrency: number,
  events: { uploaded(file: ManifestFile): void; paced(window: number, reason: string): void },
): Promise<{ window: number }> {
  const queue = unitsOf(plan.files);
  const throttles = new Map<string, number>();
  let window = concurrency;
  let active = 0;
  let failed: unknown;
  let wake: () => void = () => undefined;
  let bulkRoute = true;

  let waiting = 0;
  const release = () => {
    active--;
    wake();
  };

  const send = async (unit: Unit) => {
    if (unit.bulk && bulkRoute) {
      try {
        await api.postBulk(`/api/v1/deploys/${deployId}/files`, await multipartOf(unit.files));
        return;
      } catch (err) {
        if (!noBulkRoute(err)) throw err;
        bulkRoute = false;
      }
    }
    for (const file of unit.files)
      await api.put(
        `/api/v1/deploys/${deployId}/files/${file.hash}`,
        file.size <= BULK_FILE_MAX_BYTES
          ? { bytes: file.bytes ?? (await readFile(file.absPath)) }
          : bodyOf(file),
      );
  };

  const uploadOne = async (unit: Unit) => {
    try {
      await send(unit);
    } catch (err) {
      if (!(err instanceof Throttled)) {
        failed ??= err;
        return release();
      }
      const times = (throttles.get(unit.key) ?? 0) + 1;
      throttles.set(unit.key, times);
      if (times > MAX_THROTTLES_PER_FILE) {
        const what = unit.bulk ? `${unit.files.length} files in one request` : unit.files[0]!.sitePath;
        failed ??= new ApiUnavailable(`upload of ${what}: ${err.message} (${times} times)`);
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
      queue.unshift(unit);
      return wake();
    }
    throttles.delete(unit.key);
    for (const file of unit.files) events.uploaded(file);
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
