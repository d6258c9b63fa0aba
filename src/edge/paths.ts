import { MAX_PATH_BYTES, MAX_SEGMENT_BYTES, namesDatabaseFile } from '../files/index.js';

// One rule for what the files API refuses to create and what the edge refuses to serve.
export { namesDatabaseFile };

/** URL path → site path ('' for the root; trailing slash kept); undefined when it can name no file. */
export function decodeSitePath(urlPath: string): string | undefined {
  // Longer than any stored path can be (1024 bytes, percent-encoded at most 3 bytes a byte).
  if (urlPath.length > 3 * MAX_PATH_BYTES + 1) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return undefined;
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(decoded)) return undefined;
  const relative = decoded.replace(/^\/+/, '').normalize('NFC');
  const segments = relative.split('/');
  if (segments.some((s, i) => s === '.' || s === '..' || (s === '' && i !== segments.length - 1)))
    return undefined;
  if (Buffer.byteLength(relative) > MAX_PATH_BYTES) return undefined;
  if (segments.some((s) => Buffer.byteLength(s) > MAX_SEGMENT_BYTES)) return undefined;
  return relative;
}

// A fingerprint in a file name: `app.3f2a9c1b.js`, `index-BdOrXo1B.js`, `chunk.0a1b2c3d4e5f.css`.
const FINGERPRINT = /[.-]([A-Za-z0-9_]{8,})\.[A-Za-z0-9]+$/;

/**
 * Is this path named after its content (a build tool's hash in the file name)? Such a path never
 * changes content once published, so browsers and CDNs may keep it for a year. The token must look
 * like a hash, not a word: 8+ characters that are lower-case hex with a digit, or mix upper case,
 * lower case and digits (base64url hashes, as Vite and Rollup write them).
 */
export function isFingerprinted(sitePath: string): boolean {
  const token = FINGERPRINT.exec(sitePath)?.[1];
  if (!token) return false;
  if (/^[0-9a-f]+$/.test(token)) return /[0-9]/.test(token) && /[a-f]/.test(token);
  return /[A-Z]/.test(token) && /[a-z]/.test(token) && /[0-9]/.test(token);
}
