import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.js';
import {
  ancestors,
  extensionOf,
  MAX_PATH_BYTES,
  MAX_PATH_SEGMENTS,
  MAX_SEGMENT_BYTES,
  namesDatabaseFile,
  normalizeSitePath,
  pathParts,
} from '../../../src/files/paths.js';
import { z } from 'zod';
import { specFileTypes, uploadExtensions, videoExtensions } from '../../../src/files/file-types.js';
import { folderBody, typedSchemas } from '../../../src/files/schemas.js';

const { uploadBody } = typedSchemas(specFileTypes);

/** The AppError normalizeSitePath throws for `input`, or fails the test when it accepts it. */
function refusal(input: unknown, field?: string): AppError {
  try {
    normalizeSitePath(input, field);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error(`normalizeSitePath accepted ${JSON.stringify(input)}`);
}

describe('normalizeSitePath', () => {
  it.each([
    ['index.html', 'index.html'],
    ['blog/post.html', 'blog/post.html'],
    ['a/b/c/d.css', 'a/b/c/d.css'],
    ['assets/', 'assets'],
    ['my page.html', 'my page.html'],
    ['100%.html', '100%.html'],
    ['a#b?.html', 'a#b?.html'],
    ['.well-known/x.json', '.well-known/x.json'],
    ['...html', '...html'],
    ['café/naïve.html', 'café/naïve.html'],
    ['日本語/ページ.html', '日本語/ページ.html'],
    ['🎉/party.html', '🎉/party.html'],
  ])('accepts %j as %j', (input, expected) => {
    expect(normalizeSitePath(input)).toBe(expected);
  });

  it('returns the NFC form, so decomposed and composed spellings name the same file', () => {
    const decomposed = 'cafe\u0301/nai\u0308ve.html';
    expect(normalizeSitePath(decomposed)).toBe('caf\u00e9/na\u00efve.html');
    expect(normalizeSitePath(decomposed)).toBe(normalizeSitePath('café/naïve.html'));
  });

  it.each([
    ['empty', ''],
    ['a leading slash (absolute)', '/index.html'],
    ['only a slash', '/'],
    ['a ".." segment', '../secret.html'],
    ['a ".." segment in the middle', 'a/../../b.html'],
    ['a trailing ".."', 'a/..'],
    ['a "." segment', './index.html'],
    ['a "." segment in the middle', 'a/./b.html'],
    ['an empty segment', 'a//b.html'],
    ['two trailing slashes', 'a//'],
    ['a backslash', 'a\\b.html'],
    ['a backslash traversal', '..\\..\\etc\\passwd'],
    ['a NUL byte', 'a\u0000.html'],
    ['a newline', 'a\n.html'],
    ['a tab', 'a\tb.html'],
    ['DEL', 'a\u007f.html'],
    ['an unpaired high surrogate', '\ud800.html'],
    ['an unpaired low surrogate', 'a/\udc00b.html'],
    ['a segment with leading whitespace', ' a.html'],
    ['a segment with trailing whitespace', 'a /b.html'],
    ['a segment of only spaces', 'a/   /b.html'],
  ])('refuses %s with 400 "Invalid path"', (_what, input) => {
    const err = refusal(input);
    expect(err.status).toBe(400);
    expect(err.body.error).toBe('Invalid path');
    expect(err.body.message).toMatch(/^path /);
  });

  it.each([5, null, undefined, {}, ['a.html'], true])('refuses the non-string %j', (input) => {
    const err = refusal(input);
    expect(err.status).toBe(400);
    expect(err.body.error).toBe('Invalid path');
  });

  it('names the field it was given in the message', () => {
    expect(refusal('../x.html', 'new_path').body.message).toMatch(/^new_path /);
  });

  it(`accepts a segment of exactly ${MAX_SEGMENT_BYTES} bytes and refuses one more`, () => {
    const name = (bytes: number) => `${'a'.repeat(bytes - 5)}.html`;
    expect(normalizeSitePath(name(MAX_SEGMENT_BYTES))).toBe(name(MAX_SEGMENT_BYTES));
    expect(refusal(name(MAX_SEGMENT_BYTES + 1)).status).toBe(400);
  });

  it('measures segment length in UTF-8 bytes, not characters', () => {
    // 128 × "é" is 128 characters but 256 bytes.
    expect(refusal('é'.repeat(128)).status).toBe(400);
    expect(normalizeSitePath('é'.repeat(127))).toBe('é'.repeat(127));
  });

  it(`accepts a path of exactly ${MAX_PATH_BYTES} bytes and refuses one more`, () => {
    const segment = 'a'.repeat(200);
    // 5 × 200 + 4 slashes = 1004 bytes; a final segment fills it up to the limit.
    const path = (bytes: number) => `${Array(5).fill(segment).join('/')}/${'b'.repeat(bytes - 1005)}`;
    expect(Buffer.byteLength(path(MAX_PATH_BYTES))).toBe(MAX_PATH_BYTES);
    expect(normalizeSitePath(path(MAX_PATH_BYTES))).toBe(path(MAX_PATH_BYTES));
    expect(refusal(path(MAX_PATH_BYTES + 1)).status).toBe(400);
  });
});

describe('pathParts', () => {
  it('gives a root file no parent and depth 0', () => {
    expect(pathParts('index.html')).toEqual({ name: 'index.html', parent: null, depth: 0 });
  });

  it('gives a nested file its folder as parent and one depth per folder', () => {
    expect(pathParts('a/b/c.html')).toEqual({ name: 'c.html', parent: 'a/b', depth: 2 });
    expect(pathParts('a/b')).toEqual({ name: 'b', parent: 'a', depth: 1 });
  });

  it('keeps unicode names whole', () => {
    expect(pathParts('café/naïve.html')).toEqual({ name: 'naïve.html', parent: 'café', depth: 1 });
  });
});

describe('ancestors', () => {
  it('is empty at the root', () => {
    expect(ancestors('index.html')).toEqual([]);
  });

  it('lists every enclosing folder, outermost first', () => {
    expect(ancestors('a/b/c/d.html')).toEqual(['a', 'a/b', 'a/b/c']);
  });

  it('does not include the path itself', () => {
    expect(ancestors('a/b')).toEqual(['a']);
  });
});

describe('extensionOf', () => {
  it.each([
    ['index.html', 'html'],
    ['a/b/style.CSS', 'css'],
    ['archive.tar.gz', 'gz'],
    ['v.1/readme', ''],
    ['noext', ''],
    ['.gitkeep', ''],
    ['dir/.htaccess', ''],
    ['trailing.', ''],
    ['clip.MoV', 'mov'],
    ['café/naïve.html', 'html'],
  ])('%j → %j', (input, expected) => {
    expect(extensionOf(input)).toBe(expected);
  });
});

describe('path depth', () => {
  it(`accepts ${MAX_PATH_SEGMENTS} segments and refuses one more`, () => {
    const deep = (n: number) => [...Array.from({ length: n - 1 }, (_, i) => `d${i}`), 'index.html'].join('/');
    expect(normalizeSitePath(deep(MAX_PATH_SEGMENTS))).toBe(deep(MAX_PATH_SEGMENTS));
    expect(() => normalizeSitePath(deep(MAX_PATH_SEGMENTS + 1))).toThrow(/at most 32 segments/);
  });
});

describe('Unicode line and format controls', () => {
  it.each(['a\u0085b.html', 'a\u2028b.html', 'a\u200bb.html', 'a\u202eb.html', '\ufeffa.html'])(
    'refuses %j for a path being created',
    (input) => {
      expect(refusal(input).body.error).toBe('Invalid path');
    },
  );

  it('still reaches a file stored before the rule, to read, rename or delete it', () => {
    expect(normalizeSitePath('a\u200bb.html', 'path', 'existing')).toBe('a\u200bb.html');
    expect(() => normalizeSitePath('a\u0001b.html', 'path', 'existing')).toThrow();
  });
});

describe('paths named like an SQLite database file (never served by the edge)', () => {
  const refused = (input: string, purpose: 'create' | 'folder') => {
    try {
      normalizeSitePath(input, 'path', purpose);
    } catch (err) {
      return (
        err instanceof AppError && err.code === 'INVALID_PATH' && /SQLite database file/.test(err.message)
      );
    }
    return false;
  };

  it.each([
    'backup.db/readme.txt',
    'a/Data.SQLITE3/b/index.html',
    'x.db3/a.css',
    'x.sqlite-wal/a.css',
    'x.db-journal/a.css',
    'x.DB-SHM/a.css',
    'backup.db./readme.txt',
    'backup.db.../readme.txt',
  ])('refuses a file under %s', (path) => expect(refused(path, 'create')).toBe(true));

  it.each(['backup.db', 'a/b.sqlite', 'x.Db3', 'y.sqlite3-wal', 'z.db.'])('refuses the folder %s', (path) =>
    expect(refused(path, 'folder')).toBe(true),
  );

  it('leaves a file’s own name to the extension check, and a database path’s last segment alone', () => {
    expect(normalizeSitePath('data/app.sqlite', 'path', 'create')).toBe('data/app.sqlite');
    expect(refused('data.db/app.sqlite', 'create')).toBe(true);
  });

  it.each([
    'db/readme.txt',
    'my.dbx/a.html',
    'notes.db.d/a.html',
    'sqlite/a.html',
    'a.db.html',
    'x.db3x/y.js',
  ])('accepts the look-alike %s', (path) => expect(normalizeSitePath(path)).toBe(path));

  it('agrees with the edge: no path accepted for a new file with an allowed extension is refused by it', () => {
    const folders = ['db', 'x.db', 'X.DB.', 'a.sqlite3', 'b.sqlite-wal', 'c.db3', 'd.dbx', 'e.db.d', 'plain'];
    const names = ['index', 'x.db', 'y.sqlite'];
    for (const ext of [...uploadExtensions, ...videoExtensions])
      for (const folder of folders)
        for (const name of names) {
          const path = `${folder}/${name}.${ext}`;
          let accepted = true;
          try {
            normalizeSitePath(path);
          } catch {
            accepted = false;
          }
          expect(accepted && namesDatabaseFile(path), path).toBe(false);
          expect(accepted || namesDatabaseFile(path), path).toBe(true);
        }
  });

  it('never refuses an existing path: one stored before the rule can still be read, moved and deleted', () => {
    expect(normalizeSitePath('backup.db/readme.txt', 'path', 'existing')).toBe('backup.db/readme.txt');
  });
});

describe('the documented path patterns follow the database-name rule (the fuzzer sends what they allow)', () => {
  const pattern = (schema: z.ZodType, key: string) =>
    new RegExp(
      (z.toJSONSchema(schema, { io: 'input' }) as { properties: Record<string, { pattern: string }> })
        .properties[key]!.pattern,
    );

  it.each([
    ['backup.db', false],
    ['a/Backup.DB', false],
    ['x.db.', false],
    ['x.sqlite3-wal', false],
    ['db', true],
    ['my.dbx', true],
    ['notes.db.d', true],
    ['a/b', true],
  ])('folder %s: %s', (path, allowed) => expect(pattern(folderBody, 'path').test(path)).toBe(allowed));

  it.each([
    ['backup.db/readme.txt', false],
    ['x.DB3/a.css', false],
    ['db/a.html', true],
    ['a.db.html', true],
    ['x/y.db.d/a.html', true],
  ])('upload %s: %s', (path, allowed) => expect(pattern(uploadBody, 'path').test(path)).toBe(allowed));
});
