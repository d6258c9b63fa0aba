import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The little of POSIX ustar the PGlite template needs: regular files and folders, names up to 100
 * bytes, no links. Kept here rather than adding a dependency; `tar tzf` reads what packTar writes.
 */
const BLOCK = 512;

function header(name: string, size: number, type: '0' | '5', mode: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  if (Buffer.byteLength(name) > 100) throw new Error(`tar: name longer than 100 bytes: ${name}`);
  const octal = (value: number, width: number) => value.toString(8).padStart(width - 1, '0') + '\0';
  h.write(name, 0, 100, 'utf8');
  h.write(octal(mode, 8), 100, 'ascii');
  h.write(octal(0, 8), 108, 'ascii'); // uid
  h.write(octal(0, 8), 116, 'ascii'); // gid
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(0, 12), 136, 'ascii'); // mtime: fixed, so one folder always packs to the same bytes
  h.write(' '.repeat(8), 148, 'ascii'); // checksum placeholder: counted as spaces
  h.write(type, 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return h;
}

/** Packs the folder's files and subfolders (names relative to it, sorted). */
export async function packTar(dir: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  const walk = async (rel: string): Promise<void> => {
    const entries = await readdir(path.join(dir, rel), { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const name = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        parts.push(header(`${name}/`, 0, '5', 0o700));
        await walk(name);
      } else if (entry.isFile()) {
        const data = await readFile(path.join(dir, name));
        parts.push(header(name, data.length, '0', 0o600), data);
        const pad = (BLOCK - (data.length % BLOCK)) % BLOCK;
        if (pad) parts.push(Buffer.alloc(pad));
      } else {
        throw new Error(`tar: ${name} is neither a file nor a folder`);
      }
    }
  };
  await walk('');
  parts.push(Buffer.alloc(2 * BLOCK));
  return Buffer.concat(parts);
}

const field = (h: Buffer, start: number, end: number): string => {
  const raw = h.subarray(start, end);
  const nul = raw.indexOf(0);
  return raw.subarray(0, nul < 0 ? raw.length : nul).toString('utf8');
};

/** Unpacks into `dest` (created). Refuses anything but files and folders, and names leaving `dest`. */
export async function unpackTar(tar: Buffer, dest: string): Promise<void> {
  const root = path.resolve(dest);
  await mkdir(root, { recursive: true, mode: 0o700 });
  let offset = 0;
  while (offset + BLOCK <= tar.length) {
    const h = tar.subarray(offset, offset + BLOCK);
    if (h.every((byte) => byte === 0)) break;
    const prefix = field(h, 345, 500);
    const name = (prefix ? `${prefix}/` : '') + field(h, 0, 100);
    const size = parseInt(field(h, 124, 136).trim() || '0', 8);
    const type = field(h, 156, 157) || '0';
    const target = path.resolve(root, name);
    if (!Number.isFinite(size) || size < 0 || (target !== root && !target.startsWith(root + path.sep))) {
      throw new Error(`tar: bad entry ${JSON.stringify(name)}`);
    }
    const start = offset + BLOCK;
    if (type === '5') {
      await mkdir(target, { recursive: true, mode: 0o700 });
    } else if (type === '0') {
      if (start + size > tar.length) throw new Error(`tar: ${name} is truncated`);
      await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      await writeFile(target, tar.subarray(start, start + size), { mode: 0o600 });
    } else {
      throw new Error(`tar: entry type ${JSON.stringify(type)} of ${name} is not supported`);
    }
    offset = start + Math.ceil(size / BLOCK) * BLOCK;
  }
}
