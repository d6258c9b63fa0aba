import mime from 'mime-types';
import { AppError } from '../errors/index.js';
import { specFileTypes, uploadExtensions, videoExtensions, type FileTypes } from './extensions.js';
import { extensionOf } from './paths.js';

export { specFileTypes, uploadExtensions, videoExtensions, type FileTypes } from './extensions.js';

/**
 * The types an operator may add to the spec's list (HOSTPLANE_EXTRA_FILE_TYPES), each with the
 * Content-Type it is served with: what static-site builds (MkDocs Material, Vite, Astro) emit
 * beside the spec's types. A closed list: nothing a server would run (php, cgi…), nothing a
 * browser renders as a page other than html (htm, xhtml, shtml, xsl…), nothing without a type
 * the server knows. `.gz` is a download (application/gzip), sent as it is: never with
 * Content-Encoding, never compressed again.
 */
export const EXTRA_FILE_TYPES: Readonly<Record<string, string>> = {
  map: 'application/json', // source maps
  mjs: 'text/javascript', // RFC 9239; a module script must have a JavaScript type
  cjs: 'text/javascript',
  webmanifest: 'application/manifest+json',
  wasm: 'application/wasm', // what WebAssembly.instantiateStreaming requires
  avif: 'image/avif',
  jxl: 'image/jxl',
  gz: 'application/gzip',
  zip: 'application/zip',
  csv: 'text/csv',
  md: 'text/markdown',
  mp3: 'audio/mpeg',
};

/**
 * The spec's lists with the operator's extra extensions (already lower-case, without dots: the
 * config's syntax). One the server cannot serve is a start-up error naming the ones it can.
 */
export function fileTypesWith(extra: readonly string[]): FileTypes {
  const added = extra.filter((ext) => !uploadExtensions.has(ext) && !videoExtensions.has(ext));
  const unknown = added.filter((ext) => !Object.hasOwn(EXTRA_FILE_TYPES, ext));
  if (unknown.length)
    throw new AppError('CONFIG_INVALID', {
      message:
        `invalid configuration:\n  HOSTPLANE_EXTRA_FILE_TYPES: ${unknown.map((e) => `.${e}`).join(', ')} cannot be allowed ` +
        `(not a type Hostplane serves with a known Content-Type, or one a server would run or a browser render as a page). ` +
        `Extra types it can serve: ${Object.keys(EXTRA_FILE_TYPES).join(', ')}`,
    });
  if (added.length === 0) return specFileTypes;
  return { upload: new Set([...uploadExtensions, ...added]), video: videoExtensions, extra: added };
}

const TEXT_EXTENSIONS = new Set([
  'html', 'css', 'js', 'json', 'xml', 'txt', 'svg',
  'map', 'mjs', 'cjs', 'webmanifest', 'csv', 'md',
]); // prettier-ignore

export const isTextPath = (sitePath: string): boolean => TEXT_EXTENSIONS.has(extensionOf(sitePath));

/** Content-Type for serving a path, with charset for text types. */
export function contentTypeFor(sitePath: string): string {
  const ext = extensionOf(sitePath);
  if (ext === 'mov') return 'video/quicktime';
  // .ogg comes only through the video endpoint, so it is an Ogg video, not mime-types' audio/ogg.
  if (ext === 'ogg') return 'video/ogg';
  const type = (Object.hasOwn(EXTRA_FILE_TYPES, ext) ? EXTRA_FILE_TYPES[ext] : undefined) || mime.lookup(ext);
  if (!type) return 'application/octet-stream';
  return TEXT_EXTENSIONS.has(ext) ? `${type}; charset=utf-8` : type;
}
