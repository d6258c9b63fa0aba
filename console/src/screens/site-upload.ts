/**
 * Uploads for the file browser: what the user picked or dropped (files and whole folders, with
 * their relative paths) sent to the public files API a few at a time, with progress per file and
 * overall. Every file fails alone, in the registry's words; the others carry on.
 */
import { ApiError, errorOf, retryAfterSeconds, siteKeyFor } from '../api.js';

/** A file with where it goes, relative to the folder it was dropped on. */
export interface Picked {
  file: File;
  relative: string;
}

/** Spec 4.2 and 4.4: pages, styles, images… up to 10 MB; videos through their own endpoint, 50 MB. */
const VIDEO = new Set(['mp4', 'webm', 'ogg', 'mov']);
const MAX_FILE_BYTES = 10 * 1024 * 1024;
const MAX_VIDEO_BYTES = 50 * 1024 * 1024;
/** Operating systems' own clutter in a folder: never part of a site, and the server refuses some. */
const CLUTTER = new Set(['.DS_Store', 'Thumbs.db', 'desktop.ini']);
/**
 * Files sent at once: enough to hide each request's latency. The server admits uploads by the
 * bytes they may hold (a share of its budget per site), so small files go in side by side.
 */
export const CONCURRENCY = 8;
/** A file the server keeps refusing as busy fails after this many answers (about a minute). */
const MAX_BUSY_ANSWERS = 30;
const MAX_WAIT_SECONDS = 10;

/** The server could not take the upload now (429 the site's share, 503 its budget): try again later. */
class Busy extends Error {
  constructor(
    message: string,
    readonly seconds: number,
  ) {
    super(message);
  }
}

const extension = (path: string) => /\.([^./]+)$/.exec(path)?.[1]?.toLowerCase() ?? '';
export const isVideo = (path: string) => VIDEO.has(extension(path));

const keep = (relative: string) => !CLUTTER.has(relative.slice(relative.lastIndexOf('/') + 1));

/** Files of an <input type=file> (with webkitdirectory each carries its path below the chosen folder). */
export function pickedFromInput(files: FileList): Picked[] {
  return [...files]
    .map((file) => ({ file, relative: file.webkitRelativePath || file.name }))
    .filter((p) => keep(p.relative));
}

/**
 * What a drop carries: folders are walked (DataTransferItem.webkitGetAsEntry), keeping each file's
 * path below the dropped folder; a browser without entries gives the plain files. The entries are
 * taken before the first await: the DataTransfer is emptied once the drop event returns.
 */
export function pickedFromDrop(data: DataTransfer): Promise<Picked[]> {
  const entries: FileSystemEntry[] = [];
  const loose: File[] = [];
  for (const item of [...data.items]) {
    if (item.kind !== 'file') continue;
    const entry = item.webkitGetAsEntry?.();
    if (entry) entries.push(entry);
    else {
      const file = item.getAsFile();
      if (file) loose.push(file);
    }
  }
  if (!entries.length && !loose.length) loose.push(...data.files);
  return (async () => {
    const out: Picked[] = loose.map((file) => ({ file, relative: file.name }));
    for (const entry of entries) await walk(entry, '', out);
    return out.filter((p) => keep(p.relative));
  })();
}

async function walk(entry: FileSystemEntry, prefix: string, out: Picked[]): Promise<void> {
  if (entry.isFile) {
    const file = await new Promise<File>((resolve, reject) =>
      (entry as FileSystemFileEntry).file(resolve, reject),
    );
    out.push({ file, relative: prefix + entry.name });
    return;
  }
  if (!entry.isDirectory) return;
  const reader = (entry as FileSystemDirectoryEntry).createReader();
  // readEntries answers in batches (100 in Chromium) until an empty one.
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((resolve, reject) =>
      reader.readEntries(resolve, reject),
    );
    if (!batch.length) break;
    for (const child of batch) await walk(child, `${prefix}${entry.name}/`, out);
  }
}

export type RowState = 'waiting' | 'uploading' | 'done' | 'failed';

export interface UploadRow {
  path: string;
  size: number;
  sent: number;
  state: RowState;
  error?: string;
}

export interface UploadSummary {
  total: number;
  done: number;
  failed: number;
  bytes: number;
  sentBytes: number;
  running: boolean;
}

/**
 * One batch of uploads. `onChange` is called at most once an animation frame, so a folder of
 * thousands of files, each reporting progress, does not flood the page with renders.
 */
export class UploadBatch {
  readonly rows: UploadRow[];
  private readonly files: File[];
  private next = 0;
  /** Files the server was too busy for, sent again first. */
  private readonly again: number[] = [];
  private readonly busyAnswers = new Map<number, number>();
  private senders = 0;
  private frame = 0;
  /** Set when the user leaves the file browser: nothing more is sent, nothing more reported. */
  private aborted = false;
  private readonly inFlight = new Set<XMLHttpRequest>();
  private readonly pauses = new Set<() => void>();

  constructor(
    private readonly siteId: number,
    folder: string,
    picked: Picked[],
    private readonly onChange: () => void,
  ) {
    const base = folder ? `${folder}/` : '';
    this.rows = picked.map((p) => ({
      path: base + p.relative,
      size: p.file.size,
      sent: 0,
      state: 'waiting',
    }));
    this.files = picked.map((p) => p.file);
  }

  summary(): UploadSummary {
    let done = 0;
    let failed = 0;
    let bytes = 0;
    let sentBytes = 0;
    for (const row of this.rows) {
      if (row.state === 'done') done++;
      if (row.state === 'failed') failed++;
      bytes += row.size;
      sentBytes += row.state === 'done' ? row.size : row.sent;
    }
    return {
      total: this.rows.length,
      done,
      failed,
      bytes,
      sentBytes,
      running: done + failed < this.rows.length,
    };
  }

  /**
   * Sends every file, CONCURRENCY at a time; resolves when each is done or failed. The server
   * bounds the bytes of uploads in flight per site and per replica and answers 429/503 with
   * Retry-After beyond (large files): each such answer retires one sender, down to one, which waits
   * and retries.
   * So the batch settles at what the server admits without failing a file for it.
   */
  async run(): Promise<void> {
    const take = () =>
      this.aborted
        ? undefined
        : (this.again.shift() ?? (this.next < this.rows.length ? this.next++ : undefined));
    const worker = async () => {
      for (let index = take(); index !== undefined; index = take()) {
        const busy = await this.one(index);
        if (busy === undefined) continue;
        this.again.push(index);
        if (this.senders > 1) break;
        await this.pause(busy);
      }
      this.senders--;
    };
    this.senders = Math.min(CONCURRENCY, this.rows.length);
    await Promise.all(Array.from({ length: this.senders }, worker));
    if (!this.aborted) this.flush();
  }

  /**
   * Stops the batch (the user left the screen): requests in flight are cut off and no other file
   * starts, rather than uploads going on unseen behind another screen. `run` then resolves.
   */
  abort(): void {
    this.aborted = true;
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    for (const xhr of this.inFlight) xhr.abort();
    for (const wake of this.pauses) wake();
  }

  get stopped(): boolean {
    return this.aborted;
  }

  private pause(seconds: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.pauses.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, seconds * 1000);
      this.pauses.add(wake);
    });
  }

  private changed() {
    if (this.frame || this.aborted) return;
    this.frame = requestAnimationFrame(() => this.flush());
  }

  private flush() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.onChange();
  }

  /** Sends one file; answers the seconds to wait when the server was too busy to take it. */
  private async one(index: number): Promise<number | undefined> {
    const row = this.rows[index]!;
    const file = this.files[index]!;
    const video = isVideo(row.path);
    const max = video ? MAX_VIDEO_BYTES : MAX_FILE_BYTES;
    row.state = 'uploading';
    this.changed();
    try {
      if (file.size > max)
        throw new Error(
          video
            ? `Videos can be at most ${max} bytes (50 MB).`
            : `Files can be at most ${max} bytes (10 MB). Larger videos go through the video upload.`,
        );
      await this.send(row, file, video);
      row.state = 'done';
      row.sent = row.size;
    } catch (err) {
      const answers = (this.busyAnswers.get(index) ?? 0) + 1;
      if (err instanceof Busy && answers <= MAX_BUSY_ANSWERS) {
        this.busyAnswers.set(index, answers);
        row.state = 'waiting';
        row.sent = 0;
        this.changed();
        return err.seconds;
      }
      row.state = 'failed';
      row.error = err instanceof Error ? err.message : String(err);
    }
    this.changed();
    return undefined;
  }

  private async send(row: UploadRow, file: File, video: boolean): Promise<void> {
    let url: string;
    let body: XMLHttpRequestBodyInit;
    let type: string | undefined;
    if (video) {
      // The path part goes first: the server streams the file part as it arrives.
      const form = new FormData();
      form.append('path', row.path);
      form.append('file', file);
      url = '/api/v1/videos/upload';
      body = form;
    } else {
      url = '/api/v1/files/upload';
      body = JSON.stringify({ path: row.path, content: await base64Of(file), encoding: 'base64' });
      type = 'application/json';
    }
    const key = await siteKeyFor(this.siteId);
    try {
      await this.post(row, url, body, type, key);
    } catch (err) {
      // The key expired or was revoked during a long batch: one new key (shared by the senders).
      if (!(err instanceof ApiError && err.status === 401)) throw err;
      await this.post(row, url, body, type, await siteKeyFor(this.siteId, key));
    }
  }

  private post(
    row: UploadRow,
    url: string,
    body: XMLHttpRequestBodyInit,
    type: string | undefined,
    key: string,
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.aborted) return reject(new Error('The upload was stopped.'));
      const xhr = new XMLHttpRequest();
      this.inFlight.add(xhr);
      xhr.onloadend = () => this.inFlight.delete(xhr);
      xhr.open('POST', url);
      xhr.setRequestHeader('x-api-key', key);
      xhr.setRequestHeader('accept', 'application/json');
      if (type) xhr.setRequestHeader('content-type', type);
      xhr.upload.onprogress = (event) => {
        if (!event.lengthComputable || !event.total) return;
        // The body is larger than the file (base64, JSON): its share sent, in the file's bytes.
        row.sent = Math.floor((event.loaded / event.total) * row.size);
        this.changed();
      };
      xhr.onload = () => {
        if (xhr.status >= 200 && xhr.status < 300) return resolve();
        const retryAfter = retryAfterSeconds(xhr.getResponseHeader('retry-after'));
        const busy = (xhr.status === 429 || xhr.status === 503) && retryAfter > 0;
        const response = new Response(xhr.responseText, {
          status: xhr.status,
          headers: { 'content-type': xhr.getResponseHeader('content-type') ?? '' },
        });
        void errorOf(response).then((err) =>
          reject(busy ? new Busy(err.message, Math.min(retryAfter, MAX_WAIT_SECONDS)) : err),
        );
      };
      xhr.onerror = () => reject(new Error('The upload was cut off: check your connection and try again.'));
      xhr.onabort = () => reject(new Error('The upload was stopped.'));
      xhr.send(body);
    });
  }
}

/** The file's bytes as base64 (FileReader encodes off the main thread's JavaScript). */
function base64Of(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result);
      resolve(url.slice(url.indexOf(',') + 1));
    };
    reader.onerror = () => reject(new Error(`The file ${file.name} could not be read.`));
    reader.readAsDataURL(file);
  });
}
