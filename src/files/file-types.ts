import mime from 'mime-types';
import { extensionOf } from './paths.js';

/** Extensions accepted by POST /api/v1/files/upload (spec 4.2). */
export const uploadExtensions = new Set([
  'html', 'css', 'js', 'json', 'xml', 'txt',
  'jpg', 'jpeg', 'png', 'gif', 'svg', 'webp', 'ico',
  'pdf',
  'woff', 'woff2', 'ttf', 'otf',
]); // prettier-ignore

/** Extensions accepted by POST /api/v1/videos/upload (spec 4.4). */
export const videoExtensions = new Set(['mp4', 'webm', 'ogg', 'mov']);

const TEXT_EXTENSIONS = new Set(['html', 'css', 'js', 'json', 'xml', 'txt', 'svg']);

export const isTextPath = (sitePath: string): boolean => TEXT_EXTENSIONS.has(extensionOf(sitePath));

/** Content-Type for serving a path, with charset for text types. */
export function contentTypeFor(sitePath: string): string {
  const ext = extensionOf(sitePath);
  if (ext === 'mov') return 'video/quicktime';
  // .ogg comes only through the video endpoint, so it is an Ogg video, not mime-types' audio/ogg.
  if (ext === 'ogg') return 'video/ogg';
  const type = mime.lookup(ext);
  if (!type) return 'application/octet-stream';
  return TEXT_EXTENSIONS.has(ext) ? `${type}; charset=utf-8` : type;
}
