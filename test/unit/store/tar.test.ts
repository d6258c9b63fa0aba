import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packTar, unpackTar } from '../../../src/store/tar.js';

// The PGlite template's packing: files and folders through a round trip, nothing outside the target.
const work: string[] = [];
const tempDir = async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-tar-'));
  work.push(dir);
  return dir;
};
afterAll(async () => {
  await Promise.all(work.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('tar', () => {
  it('unpacks what it packed: nested folders, empty and block-sized files, bytes intact', async () => {
    const src = await tempDir();
    await mkdir(path.join(src, 'base/5'), { recursive: true });
    await mkdir(path.join(src, 'pg_tblspc'));
    const files: Record<string, Buffer> = {
      PG_VERSION: Buffer.from('17\n'),
      'base/5/1259': Buffer.alloc(8192, 7),
      'base/5/empty': Buffer.alloc(0),
      'global/pg_control': Buffer.from(Array.from({ length: 513 }, (_, i) => i % 256)),
    };
    await mkdir(path.join(src, 'global'));
    for (const [name, data] of Object.entries(files)) await writeFile(path.join(src, name), data);

    const packed = await packTar(src);
    expect(packed.length % 512).toBe(0);
    expect(await packTar(src)).toEqual(packed); // deterministic: no mtimes, sorted names
    const dest = path.join(await tempDir(), 'out');
    await unpackTar(packed, dest);
    for (const [name, data] of Object.entries(files))
      expect(await readFile(path.join(dest, name))).toEqual(data);
    expect((await stat(path.join(dest, 'pg_tblspc'))).isDirectory()).toBe(true);
    expect((await stat(path.join(dest, 'base/5/1259'))).mode & 0o777).toBe(0o600);
  });

  it('refuses names that leave the target, and entry types it does not know', async () => {
    const src = await tempDir();
    await writeFile(path.join(src, 'a'), 'x');
    const packed = await packTar(src);
    const renamed = (name: string, type = '0') => {
      const copy = Buffer.from(packed);
      copy.fill(0, 0, 100).write(name, 0, 'utf8');
      copy.write(type, 156, 'ascii');
      return copy; // the checksum is not checked: the template is our own build output
    };
    const dest = path.join(await tempDir(), 'out');
    await expect(unpackTar(renamed('../escape'), dest)).rejects.toThrow(/bad entry/);
    await expect(unpackTar(renamed('/etc/x'), dest)).rejects.toThrow(/bad entry/);
    await expect(unpackTar(renamed('link', '2'), dest)).rejects.toThrow(/not supported/);
  });
});
