import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from '../../errors/index.js';

/**
 * What a bookmark points at: the state of database `databaseId` at the end of replica generation
 * `generation` — the moment just before a point-in-time restore started a new generation. That
 * generation is never written again, so restoring all of it gives exactly that state back.
 */
export interface Bookmark {
  databaseId: number;
  generation: number;
  /** When the bookmarked state was current (answered as `restoredTo` by the undo). */
  at: Date;
}

const VERSION = 1;
const MAX_LENGTH = 512;

const invalid = (message = 'This bookmark is not valid for this database.') =>
  new AppError('SQLITE_BOOKMARK_INVALID', { message });

/**
 * Opaque to clients: `<payload>.<mac>`, both base64url; the payload is JSON and the mac an
 * HMAC-SHA256 of it with a server secret, so a bookmark cannot be forged or pointed at another
 * database or generation.
 */
export function signBookmark(bookmark: Bookmark, secret: Buffer): string {
  const payload = Buffer.from(
    JSON.stringify({
      v: VERSION,
      d: bookmark.databaseId,
      g: bookmark.generation,
      t: bookmark.at.toISOString(),
    }),
  ).toString('base64url');
  return `${payload}.${mac(payload, secret).toString('base64url')}`;
}

/** The bookmark a client sent back, checked: 400 SQLITE_BOOKMARK_INVALID when it is not ours. */
export function readBookmark(text: string, secret: Buffer): Bookmark {
  if (text.length > MAX_LENGTH) throw invalid();
  const match = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(text);
  if (!match) throw invalid('A bookmark is the opaque string a restore answered as previousBookmark.');
  const [, payload, signature] = match as unknown as [string, string, string];
  // Compared as text: base64url decoding ignores a last character's spare bits.
  const presented = Buffer.from(signature);
  const expected = Buffer.from(mac(payload, secret).toString('base64url'));
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  const { v, d, g, t } = (parsed ?? {}) as Record<string, unknown>;
  const at = typeof t === 'string' ? new Date(t) : undefined;
  if (v !== VERSION || !Number.isInteger(d) || !Number.isInteger(g) || !at || Number.isNaN(at.getTime()))
    throw invalid();
  return { databaseId: d as number, generation: g as number, at };
}

function mac(payload: string, secret: Buffer): Buffer {
  return createHmac('sha256', secret).update(`sqlite-restore-bookmark\n${payload}`).digest();
}
