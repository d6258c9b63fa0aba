import { siteUrl, type Config } from '../config/index.js';
import { AppError } from '../errors/index.js';
import type { Site } from '../platform/index.js';
import { videoExtensions } from './file-types.js';
import { extensionOf } from './paths.js';
import { MAX_FILE_BYTES, MAX_VIDEO_BYTES } from './service.js';

// A flat character-class loop: a grouped `(?:…{4})*` overflows V8's regex stack on megabytes of input.
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/;

export const tooLarge = () => new AppError('FILE_TOO_LARGE', { maxBytes: MAX_FILE_BYTES, what: 'file' });

/** The largest file a path may hold: its own type's limit (50 MB for a video, else 10 MB). */
export const maxBytesFor = (sitePath: string): number =>
  videoExtensions.has(extensionOf(sitePath)) ? MAX_VIDEO_BYTES : MAX_FILE_BYTES;

/** The refusal of `size` bytes at `sitePath`, naming the path (a deploy's manifest may share blobs). */
export const tooLargeFor = (sitePath: string): AppError => {
  const maxBytes = maxBytesFor(sitePath);
  return maxBytes === MAX_FILE_BYTES
    ? new AppError('FILE_TOO_LARGE', { maxBytes, what: 'file', path: sitePath })
    : new AppError('VIDEO_TOO_LARGE', { maxBytes });
};

export function fileUrl(config: Config, site: Site, sitePath: string): string {
  return `${siteUrl(config, site.slug)}/${sitePath.split('/').map(encodeURIComponent).join('/')}`;
}

export function assertExtension(
  sitePath: string,
  allowed: ReadonlySet<string>,
  field: string,
  hint: string,
): void {
  const ext = extensionOf(sitePath);
  if (!allowed.has(ext)) {
    throw new AppError('INVALID_FILE_TYPE', {
      message: `${field} has ${ext ? `the extension .${ext}` : 'no extension'}, which is not allowed. Allowed: ${[...allowed].join(', ')}.${hint}`,
    });
  }
}

export function decodeContent(content: string, encoding: string | undefined): Buffer {
  if (encoding !== 'base64') return Buffer.from(content, 'utf8');
  const compact = content.replace(/\s+/g, '');
  if (compact.length % 4 !== 0 || !BASE64_CHARS.test(compact)) {
    throw new AppError('INVALID_CONTENT', { message: 'content is not valid base64' });
  }
  return Buffer.from(compact, 'base64');
}
