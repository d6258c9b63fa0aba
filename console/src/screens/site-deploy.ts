/**
 * A folder deployed from the console as one deploy (README "Deploys"), as `hostplane deploy` does
 * it: every file hashed in the browser (SHA-256, SubtleCrypto), the manifest sent with
 * `POST /api/v1/deploys`, the blobs the site lacks uploaded, then finalize: the site switches to
 * the new files at once, and the version it replaces stays in the history to restore. The calls
 * go with the console's own session (cookie and CSRF token, `site_id` in the query), so the
 * history says the console made the deploy.
 */
import { ApiError, call, send } from '../api.js';
import type { DeployPlan } from './deploy-rules.js';

/** A deploy as the API answers it (the fields the console reads). */
export interface DeployAnswer {
  id: string;
  state: 'uploading' | 'ready' | 'draft' | 'published';
  file_count: number;
  bytes: number;
  live: boolean;
  preview_url: string | null;
}

/** Files hashed at once (each is read whole into memory, so few). */
const HASH_CONCURRENCY = 4;
/** Large blobs sent at once, each by its own PUT (as the CLI and the file uploads). */
export const BLOB_CONCURRENCY = 8;
/** A blob the server keeps refusing as busy (429, 503) fails the deploy after this many answers. */
const MAX_BUSY_ANSWERS = 30;
const MAX_WAIT_SECONDS = 10;

/** SHA-256 of a file's bytes, lower-case hex. */
export async function sha256Hex(file: File): Promise<string> {
  // SubtleCrypto is there only in a secure context (HTTPS, or http://localhost).
  if (!globalThis.crypto?.subtle)
    throw new Error(
      'This page is not served over HTTPS, so the browser cannot hash files for a deploy: open the console over HTTPS, or upload into the current folder instead.',
    );
  const digest = await crypto.subtle.digest('SHA-256', await file.arrayBuffer());
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

const wait = (seconds: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, seconds * 1000);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      resolve();
    }
  });

type Blob_ = { hash: string; file: File };

/** Files up to this size go in bulk requests; larger ones by their own PUT (as the CLI). */
const BULK_FILE_MAX_BYTES = 1024 * 1024;
/** Per bulk request: the server takes at most 1,000 parts and 50 MB; 8 MB keeps a few in flight. */
const BUCKET_FILES = 1000;
const BUCKET_BYTES = 8 * 1024 * 1024;
/** Bulk requests at once (each carries many files). */
const BUCKET_CONCURRENCY = 2;

/** Small blobs in buckets within the bulk route's limits, in order. */
function bucketsOf(blobs: Blob_[]): Blob_[][] {
  const buckets: Blob_[][] = [];
  let bucket: Blob_[] = [];
  let bytes = 0;
  for (const blob of blobs) {
    if (bucket.length > 0 && (bucket.length >= BUCKET_FILES || bytes + blob.file.size > BUCKET_BYTES)) {
      buckets.push(bucket);
      bucket = [];
      bytes = 0;
    }
    bucket.push(blob);
    bytes += blob.file.size;
  }
  if (bucket.length > 0) buckets.push(bucket);
  return buckets;
}

/** Sends one request, waiting out 429/503 (the server's upload byte budget) per its Retry-After. */
async function sendPatiently(
  request: () => Promise<unknown>,
  signal: AbortSignal | undefined,
): Promise<void> {
  for (let answers = 1; ; answers++) {
    try {
      await request();
      return;
    } catch (err) {
      const busy = err instanceof ApiError && (err.status === 429 || err.status === 503);
      if (!busy || answers >= MAX_BUSY_ANSWERS || signal?.aborted) throw err;
      await wait(Math.min(Math.max(1, err.retryAfter), MAX_WAIT_SECONDS), signal);
    }
  }
}

/** Runs `task` over `items`, `concurrency` at a time, until done or aborted. */
async function pool<T>(
  items: T[],
  concurrency: number,
  signal: AbortSignal | undefined,
  task: (item: T) => Promise<void>,
) {
  let next = 0;
  const worker = async () => {
    while (next < items.length && !signal?.aborted) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/**
 * Uploads the blobs a deploy asked for: small ones many to a request with the bulk route
 * (`POST /api/v1/deploys/{id}/files`, one multipart part per blob named by its SHA-256), larger
 * ones each with `PUT /api/v1/deploys/{id}/files/{sha256}`; `onSent` after each blob. A 429 or
 * 503 (the server's upload byte budget) waits its Retry-After and goes again; any other refusal
 * fails the deploy.
 */
export async function uploadDeployBlobs(
  siteId: number,
  deployId: string,
  blobs: Blob_[],
  options: { signal?: AbortSignal; onSent?(blob: Blob_): void } = {},
): Promise<void> {
  const { signal } = options;
  const small = blobs.filter((b) => b.file.size <= BULK_FILE_MAX_BYTES);
  const large = blobs.filter((b) => b.file.size > BULK_FILE_MAX_BYTES);
  await Promise.all([
    pool(bucketsOf(small), BUCKET_CONCURRENCY, signal, async (bucket) => {
      await sendPatiently(() => {
        const form = new FormData();
        for (const blob of bucket) form.append(blob.hash, blob.file, blob.file.name || blob.hash);
        return send('POST', `/api/v1/deploys/${deployId}/files`, {
          query: { site_id: siteId },
          body: form,
          signal,
        });
      }, signal);
      for (const blob of bucket) options.onSent?.(blob);
    }),
    pool(large, BLOB_CONCURRENCY, signal, async (blob) => {
      await sendPatiently(
        () =>
          send('PUT', `/api/v1/deploys/${deployId}/files/${blob.hash}`, {
            query: { site_id: siteId },
            body: blob.file,
            headers: { 'content-type': 'application/octet-stream' },
            signal,
          }),
        signal,
      );
      options.onSent?.(blob);
    }),
  ]);
}

export type Phase = 'hashing' | 'creating' | 'uploading' | 'finalizing' | 'live' | 'failed' | 'stopped';

/** One folder deploy with its progress; `onChange` at most once an animation frame. */
export class FolderDeploy {
  phase: Phase = 'hashing';
  hashed = 0;
  /** Distinct contents the server asked for, and how many (and how many bytes) are sent. */
  required = 0;
  requiredBytes = 0;
  sent = 0;
  sentBytes = 0;
  deploy?: DeployAnswer;
  error?: string;
  readonly startedAt = Date.now();
  finishedAt?: number;
  private readonly controller = new AbortController();
  private frame = 0;

  constructor(
    private readonly siteId: number,
    readonly folderName: string,
    readonly plan: DeployPlan,
    private readonly onChange: () => void,
  ) {}

  get total(): number {
    return this.plan.files.length;
  }

  get running(): boolean {
    return this.phase !== 'live' && this.phase !== 'failed' && this.phase !== 'stopped';
  }

  async run(): Promise<void> {
    const signal = this.controller.signal;
    try {
      const hashes = await this.hashAll(signal);
      const manifest: Record<string, string> = {};
      const byHash = new Map<string, File>();
      this.plan.files.forEach(({ path, file }, i) => {
        manifest[path] = hashes[i]!;
        if (!byHash.has(hashes[i]!)) byHash.set(hashes[i]!, file);
      });
      this.set('creating');
      const created = await call<DeployAnswer & { required: string[] }>('POST', '/api/v1/deploys', {
        query: { site_id: this.siteId },
        json: { files: manifest },
        signal,
      });
      this.deploy = created;
      const blobs = created.required.map((hash) => ({ hash, file: byHash.get(hash)! }));
      this.required = blobs.length;
      this.requiredBytes = blobs.reduce((sum, b) => sum + b.file.size, 0);
      this.set('uploading');
      await uploadDeployBlobs(this.siteId, created.id, blobs, {
        signal,
        onSent: (blob) => {
          this.sent++;
          this.sentBytes += blob.file.size;
          this.changed();
        },
      });
      if (signal.aborted) throw new DOMException('stopped', 'AbortError');
      this.set('finalizing');
      this.deploy = await call<DeployAnswer>('POST', `/api/v1/deploys/${created.id}/finalize`, {
        query: { site_id: this.siteId },
        signal,
      });
      this.finish('live');
    } catch (err) {
      // A deploy that will not finish is cancelled rather than left to expire (the server
      // refuses to cancel one that went live meanwhile).
      const unfinished = this.deploy;
      if (unfinished && this.phase !== 'live')
        void send('DELETE', `/api/v1/deploys/${unfinished.id}`, { query: { site_id: this.siteId } }).catch(
          () => undefined,
        );
      if (signal.aborted) return this.finish('stopped');
      this.error = err instanceof Error ? err.message : String(err);
      this.finish('failed');
    }
  }

  /** Stops the deploy (the user left the screen): nothing more is sent, nothing more reported. */
  abort(): void {
    this.controller.abort();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
  }

  private async hashAll(signal: AbortSignal): Promise<string[]> {
    const files = this.plan.files;
    const out: string[] = new Array(files.length);
    let next = 0;
    const worker = async () => {
      while (next < files.length && !signal.aborted) {
        const i = next++;
        out[i] = await sha256Hex(files[i]!.file);
        this.hashed++;
        this.changed();
      }
    };
    await Promise.all(Array.from({ length: Math.min(HASH_CONCURRENCY, files.length) }, worker));
    if (signal.aborted) throw new DOMException('stopped', 'AbortError');
    return out;
  }

  private set(phase: Phase) {
    this.phase = phase;
    this.changed();
  }

  private finish(phase: Phase) {
    this.phase = phase;
    this.finishedAt = Date.now();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    if (phase !== 'stopped') this.onChange();
  }

  private changed() {
    if (this.frame || this.controller.signal.aborted) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.onChange();
    });
  }
}
