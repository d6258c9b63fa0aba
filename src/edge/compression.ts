import { promisify } from 'node:util';
import zlib from 'node:zlib';

export type Encoding = 'br' | 'gzip';

/** Smaller text files gain less than the header and the CPU of choosing cost. */
export const MIN_COMPRESSIBLE_BYTES = 1024;
const COMPRESSIBLE_TYPE =
  /^(?:text\/|application\/(?:javascript|json|xml|manifest\+json|wasm)|image\/svg\+xml)/;

/** Is a file of this type and size offered compressed (when it is also held in memory)? */
export function isCompressible(contentType: string, size: number): boolean {
  return size >= MIN_COMPRESSIBLE_BYTES && COMPRESSIBLE_TYPE.test(contentType);
}

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

/**
 * Compresses once, at the highest level: the result is cached per blob and served many times.
 * Runs on libuv's thread pool, so the event loop keeps answering meanwhile.
 */
export function compress(bytes: Buffer, encoding: Encoding): Promise<Buffer> {
  return encoding === 'br'
    ? brotli(bytes, {
        params: {
          [zlib.constants.BROTLI_PARAM_QUALITY]: zlib.constants.BROTLI_MAX_QUALITY,
          [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
          [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
        },
      })
    : gzip(bytes, { level: zlib.constants.Z_BEST_COMPRESSION });
}

const preferences = new Map<string, Encoding | undefined>();

/**
 * The encoding to answer with for an Accept-Encoding header: brotli, then gzip, each unless
 * refused with q=0 (`*` counts for both); undefined for identity. Browsers send a handful of
 * distinct headers, so answers are remembered (a bounded map, cleared when full).
 */
export function preferredEncoding(acceptEncoding: string | undefined): Encoding | undefined {
  if (!acceptEncoding) return undefined;
  if (preferences.has(acceptEncoding)) return preferences.get(acceptEncoding);
  const q = new Map<string, number>();
  for (const part of acceptEncoding.toLowerCase().split(',')) {
    const [name = '', ...params] = part.split(';').map((s) => s.trim());
    const qParam = params.find((p) => p.startsWith('q='));
    const value = qParam ? Number(qParam.slice(2)) : 1;
    if (name) q.set(name, Number.isFinite(value) ? value : 0);
  }
  const accepts = (name: string) => (q.get(name) ?? q.get('*') ?? 0) > 0;
  const chosen: Encoding | undefined = accepts('br') ? 'br' : accepts('gzip') ? 'gzip' : undefined;
  if (acceptEncoding.length <= 256) {
    if (preferences.size >= 1000) preferences.clear();
    preferences.set(acceptEncoding, chosen);
  }
  return chosen;
}
