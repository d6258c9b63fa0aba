import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { multipartOf } from '../../../src/cli/deploy/bulk.js';
import { checkFiles, hashAll } from '../../../src/cli/deploy/hash.js';
import { walk } from '../../../src/cli/deploy/walk.js';
import { sha256 } from '../../support/deploys-api.js';

// The folder walk of `hostplane deploy` on real temp folders: ignores, links, databases, and the
// server's path rules checked before anything is sent.

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function folder(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-walk-'));
  dirs.push(dir);
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  return dir;
}

describe('walk', () => {
  it('follows links inside the folder, skips links out of it and loops, and applies the ignore file', async () => {
    const outside = await folder({ 'secret.txt': 'no' });
    const dir = await folder({
      'index.html': 'i',
      'assets/app.js': 'a',
      'build/cache/x.js': 'c',
      'build/keep.js': 'k',
      'db.sqlite3/inner.html': 'in a folder named like a database',
      'data.db-wal': 'wal',
      '.hostplaneignore': 'build/**\n!build/keep.js\n',
    });
    await symlink(path.join(dir, 'assets'), path.join(dir, 'static'));
    await symlink(path.join(dir, 'index.html'), path.join(dir, 'home.html'));
    await symlink(outside, path.join(dir, 'escape'));
    await symlink(dir, path.join(dir, 'assets', 'loop'));
    await symlink(path.join(dir, 'missing.html'), path.join(dir, 'dangling.html'));

    const walked = await walk(dir);
    expect(walked.files.map((f) => f.relPath)).toEqual([
      'assets/app.js',
      'build/keep.js',
      'home.html',
      'index.html',
      'static/app.js',
    ]);
    expect(walked.skipped).toEqual([
      { relPath: 'assets/loop', reason: 'special' },
      { relPath: 'dangling.html', reason: 'special' },
      { relPath: 'data.db-wal', reason: 'database' },
      { relPath: 'db.sqlite3', reason: 'database' },
      { relPath: 'escape', reason: 'outside' },
      { relPath: 'static/loop', reason: 'special' },
    ]);
    // .hostplaneignore itself and build/cache (the folder's files are ignored one by one).
    expect(walked.ignored).toBe(2);

    const { ok, refused } = checkFiles(walked.files);
    expect(refused).toEqual([]);
    const hashed = await hashAll(ok);
    expect(hashed.find((f) => f.sitePath === 'home.html')).toMatchObject({ hash: sha256('i'), size: 1 });
  });

  it('refuses, all at once, what the server would: extensions, names, Unicode twins', async () => {
    const dir = await folder({
      'ok.html': 'ok',
      'notes.md': 'md',
      Makefile: 'm',
      ' lead.html': 'space',
      'caf\u00e9.html': 'nfc',
      'cafe\u0301.html': 'nfd',
    });
    const { ok, refused } = checkFiles((await walk(dir)).files);
    expect(ok.map((f) => f.sitePath).sort()).toEqual(['café.html', 'ok.html']);
    expect(refused.map((r) => [r.relPath, r.limit])).toEqual(
      expect.arrayContaining([
        [' lead.html', false],
        ['Makefile', false],
        ['notes.md', false],
        [expect.stringMatching(/^caf/), false],
      ]),
    );
    expect(refused).toHaveLength(4);
    expect(refused.find((r) => r.relPath === 'notes.md')!.reason).toBe(
      '.md files are not served by Hostplane',
    );
  });

  it('a bucket carries the bytes that were hashed, not what the file holds by the time it is sent', async () => {
    // Small files are read once: hashed, kept, sent. A file rewritten in between (a build still
    // running) no longer makes the server refuse the bucket with 400 Hash mismatch.
    const dir = await folder({ 'a.html': 'first', 'b.css': 'body{}' });
    const hashed = await hashAll(checkFiles((await walk(dir)).files).ok);
    await writeFile(path.join(dir, 'a.html'), 'second, longer');
    const body = Buffer.from((await multipartOf(hashed)).multipart).toString();
    expect(body).toContain(`name="${sha256('first')}"`);
    expect(body).toContain('\r\n\r\nfirst\r\n');
    expect(body).not.toContain('second');
  });
});
