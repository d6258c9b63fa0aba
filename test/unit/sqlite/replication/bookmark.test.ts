import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../../src/errors/index.js';
import { readBookmark, signBookmark } from '../../../../src/sqlite/replication/bookmark.js';

// The undo handle of a point-in-time restore: opaque, and only ever read back as it was issued.

const secret = randomBytes(32);
const bookmark = { databaseId: 7, generation: 2, at: new Date('2026-05-08T09:00:00.123Z') };

const refusal = (text: string, key = secret) => {
  try {
    readBookmark(text, key);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('SQLITE_BOOKMARK_INVALID');
    expect((err as AppError).status).toBe(400);
    return true;
  }
  return false;
};

describe('restore bookmarks', () => {
  it('reads back what it signed', () => {
    const text = signBookmark(bookmark, secret);
    expect(text).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(readBookmark(text, secret)).toEqual(bookmark);
  });

  it('refuses one altered anywhere, signed with another key, or not a bookmark at all', () => {
    const text = signBookmark(bookmark, secret);
    const [payload, mac] = text.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify({ v: 1, d: 8, g: 2, t: bookmark.at.toISOString() })).toString(
      'base64url',
    );
    const flip = (s: string, i: number) => `${s.slice(0, i)}${s[i] === 'A' ? 'B' : 'A'}${s.slice(i + 1)}`;
    for (const bad of [
      `${forged}.${mac}`,
      `${flip(payload, 3)}.${mac}`,
      `${payload}.${flip(mac, 0)}`,
      `${payload}.${flip(mac, mac.length - 1)}`, // the last character's spare bits count too
      `${payload}.${mac}A`,
      `${payload}`,
      '',
      'a.b.c',
      'x'.repeat(600),
    ])
      expect(refusal(bad), bad).toBe(true);
    expect(refusal(text, randomBytes(32))).toBe(true);
  });
});
