import { pipeline } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { trace } from '@opentelemetry/api';
import rangeParser from 'range-parser';
import type { EdgeCache } from './cache.js';
import { preferredEncoding, type Encoding } from './compression.js';
import { pumpFile } from './file-pump.js';
import { etagMatches, ifRangeAllows, notModifiedSince, variantEtag, type FileEntry } from './entries.js';

// Writing answers straight to node:http: one writeHead with a flat header list, one end.

const page = (title: string, message: string) =>
  Buffer.from(`<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head>
<body><h1>${title}</h1><p>${message}</p></body></html>`);
const NO_PAGE_HERE = page('404 Not Found', 'There is no page at this address.');
const NO_SITE_HERE = page('404 Not Found', 'No site is served at this address.');
const UNAVAILABLE = page(
  '503 Service Unavailable',
  'This page cannot be served right now. Try again shortly.',
);
const METHOD_NOT_ALLOWED = Buffer.from('Method Not Allowed');
const HTML = 'text/html; charset=utf-8';

/** A fixed answer (404 pages, 405, 503): headers and body, plus the request id. */
export function sendFixed(
  res: ServerResponse,
  status: number,
  requestId: string,
  kind: 'noPage' | 'noSite' | 'method' | 'unavailable',
  head: boolean,
): number {
  const body =
    kind === 'noPage'
      ? NO_PAGE_HERE
      : kind === 'noSite'
        ? NO_SITE_HERE
        : kind === 'method'
          ? METHOD_NOT_ALLOWED
          : UNAVAILABLE;
  const headers = [
    'Content-Type',
    kind === 'method' ? 'text/plain; charset=utf-8' : HTML,
    'Content-Length',
    String(body.length),
    'Cache-Control',
    'no-cache',
    'X-Request-Id',
    requestId,
  ];
  if (kind === 'method') headers.push('Allow', 'GET, HEAD');
  if (kind === 'unavailable') headers.push('Retry-After', '5');
  res.writeHead(status, headers);
  res.end(head ? undefined : body);
  return status;
}

/** A 301 to the folder's index (the query string kept); browsers may keep it five minutes. */
export function sendRedirect(
  res: ServerResponse,
  location: string,
  requestId: string,
  head: boolean,
): number {
  const safe = location.replace(
    /[^\x21-\x7e]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`,
  );
  const body = Buffer.from(`Moved Permanently. Redirecting to ${safe}`);
  res.writeHead(301, [
    'Location',
    safe,
    'Content-Type',
    'text/plain; charset=utf-8',
    'Content-Length',
    String(body.length),
    'Cache-Control',
    'public, max-age=300',
    'X-Request-Id',
    requestId,
  ]);
  res.end(head ? undefined : body);
  return 301;
}

/**
 * A file with status 200 (conditional and range requests honoured, compressed when accepted and
 * ready) or 404 (a site's 404.html: no validators, no ranges). Returns the status, synchronously
 * when the bytes are in memory, else once the answer is complete.
 */
export function sendEntry(
  cache: EdgeCache,
  req: IncomingMessage,
  res: ServerResponse,
  entry: FileEntry,
  status: 200 | 404,
  requestId: string,
): number | Promise<number> {
  const head = req.method === 'HEAD';
  if (status === 404) {
    const bytes = entry.inMemory ? cache.cachedBlob(entry.hash) : undefined;
    if (bytes || !entry.inMemory)
      return writeEntry(cache, res, entry, 404, requestId, head, bytes, undefined, undefined);
    return cache
      .loadBlob(entry.hash)
      .then((b) => writeEntry(cache, res, entry, 404, requestId, head, b, undefined, undefined));
  }

  const headers = req.headers;
  const ifNoneMatch = headers['if-none-match'];
  const notModified =
    ifNoneMatch !== undefined
      ? etagMatches(ifNoneMatch, entry.hash)
      : headers['if-modified-since'] !== undefined &&
        notModifiedSince(headers['if-modified-since'], entry.lastModifiedMs);

  let range: { start: number; end: number } | undefined;
  const rangeHeader = headers.range;
  if (
    !notModified &&
    rangeHeader !== undefined &&
    entry.size > 0 &&
    ifRangeAllows(single(headers['if-range']), entry)
  ) {
    const parsed = rangeParser(entry.size, rangeHeader, { combine: true });
    if (parsed === -1) {
      res.writeHead(416, [
        ...entry.headers,
        'Content-Range',
        `bytes */${entry.size}`,
        'Content-Length',
        '0',
        'X-Request-Id',
        requestId,
      ]);
      res.end();
      return 416;
    }
    if (parsed !== -2 && parsed.type === 'bytes' && parsed.length === 1 && parsed[0]) {
      range = { start: parsed[0].start, end: parsed[0].end };
    }
  }
  // Ranges address the identity bytes; compression applies to whole answers only.
  const encoding = entry.compressible && !range ? preferredEncoding(headers['accept-encoding']) : undefined;

  if (notModified) {
    res.writeHead(304, [
      ...entry.headers,
      'ETag',
      variantEtag(entry.hash, encoding),
      'X-Request-Id',
      requestId,
    ]);
    res.end();
    return 304;
  }
  if (!entry.inMemory)
    return writeEntry(cache, res, entry, 200, requestId, head, undefined, undefined, range);
  const bytes = cache.cachedBlob(entry.hash);
  if (bytes) return writeEntry(cache, res, entry, 200, requestId, head, bytes, encoding, range);
  return cache
    .loadBlob(entry.hash)
    .then((b) => writeEntry(cache, res, entry, 200, requestId, head, b, encoding, range));
}

/** Node gives unknown headers repeated as an array; only a single value is meaningful here. */
const single = (value: string | string[] | undefined) => (Array.isArray(value) ? undefined : value);

function writeEntry(
  cache: EdgeCache,
  res: ServerResponse,
  entry: FileEntry,
  status: 200 | 404,
  requestId: string,
  head: boolean,
  identity: Buffer | undefined,
  encoding: Encoding | undefined,
  range: { start: number; end: number } | undefined,
): number | Promise<number> {
  const compressed = encoding && identity ? cache.variant(entry.hash, encoding, identity) : undefined;
  const used = compressed ? encoding : undefined;
  const length = range ? range.end - range.start + 1 : compressed ? compressed.length : entry.size;
  const headers =
    status === 404
      ? [...entry.notFoundHeaders, 'Content-Length', String(length), 'X-Request-Id', requestId]
      : [
          ...entry.headers,
          'ETag',
          variantEtag(entry.hash, used),
          'Content-Length',
          String(length),
          'X-Request-Id',
          requestId,
        ];
  if (used) headers.push('Content-Encoding', used);
  const answered = range ? 206 : status;
  if (range) headers.push('Content-Range', `bytes ${range.start}-${range.end}/${entry.size}`);
  if (head) {
    res.writeHead(answered, headers);
    res.end();
    return answered;
  }
  if (identity) {
    res.writeHead(answered, headers);
    res.end(compressed ?? (range ? identity.subarray(range.start, range.end + 1) : identity));
    return answered;
  }
  return stream(cache, res, entry, answered, headers, range);
}

/**
 * Streams a file too large for memory: from the disk cache (a complete file, or a fill in flight),
 * else from the blob store; resolves when the answer is over.
 */
async function stream(
  cache: EdgeCache,
  res: ServerResponse,
  entry: FileEntry,
  status: number,
  headers: string[],
  range: { start: number; end: number } | undefined,
): Promise<number> {
  const span = trace.getActiveSpan();
  const disk = await cache.disk.open(entry.hash, entry.size, range);
  if (disk?.source === 'disk') {
    span?.setAttribute('hostplane.edge.source', 'disk');
    // The client may have left while the file was opened: its 'close' has passed.
    if (res.destroyed || res.closed) {
      disk.file.release();
      return status;
    }
    res.writeHead(status, headers);
    await pumpFile(disk.file, res);
    return status;
  }
  const object = disk ?? (await cache.stream(entry.hash, range));
  if (!object) throw new Error(`blob ${entry.hash} is missing from the blob store`);
  span?.setAttribute('hostplane.edge.source', 'source' in object ? object.source : 'blob_store');
  // The client may have left while the source was opened (a fill waits for the blob store): its
  // 'close' has passed, so release the source now (a fill's reader, an S3 socket).
  if (res.destroyed || res.closed) {
    object.body.destroy();
    return status;
  }
  res.writeHead(status, headers);
  // pipeline destroys both sides whichever ends first: an error, the end, or the client leaving.
  return new Promise<number>((resolve) => pipeline(object.body, res, () => resolve(status)));
}
