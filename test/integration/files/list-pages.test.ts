import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { siteFiles } from '../../../src/files/tables.js';
import {
  hostplaneWithFreshSites,
  okJson,
  put,
  storageLimits,
  type FileEntry,
  type FilesApi,
} from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';
import { sqliteApi } from '../../support/sqlite-api.js';

// The files list is read off an index in the spec's order, the second half of the pages backwards,
// and its totals come from counters kept with every change (no count over the site). These check
// the answers those give: the order at every page boundary, and totals that stay exact.

interface ListBody {
  files: FileEntry[];
  storage_folder: { file_count: number; storage_used: number };
  pagination: { total_items: number; total_pages: number; has_more: boolean; is_last_page: boolean };
}

const bytes = (s: string) => Buffer.from(s, 'utf8');
/** Spec 2.1: depth, folders first, then the name ignoring case (byte order), then exactly, then the path. */
const specOrder = (a: FileEntry, b: FileEntry): number =>
  a.depth - b.depth ||
  (a.type === 'folder' ? 0 : 1) - (b.type === 'folder' ? 0 : 1) ||
  Buffer.compare(bytes(a.name.toLowerCase()), bytes(b.name.toLowerCase())) ||
  Buffer.compare(bytes(a.name), bytes(b.name)) ||
  Buffer.compare(bytes(a.path), bytes(b.path));

const ancestors = (p: string) => {
  const s = p.split('/');
  return s.slice(0, -1).map((_, i) => s.slice(0, i + 1).join('/'));
};
const under = (p: string, folder: string) => p === folder || p.startsWith(`${folder}/`);

/** What the site should hold: files (path → size; SQLite databases listed as size 0) and folders. */
class Model {
  files = new Map<string, number>();
  folders = new Set<string>();
  /** Files named .gitkeep: counted as files, never listed. */
  hidden = new Set<string>();
  addFile(path: string, size: number) {
    this.files.set(path, size);
    for (const a of ancestors(path)) this.folders.add(a);
  }
  addFolder(path: string) {
    for (const a of [...ancestors(path), path]) this.folders.add(a);
  }
  moveFolder(from: string, to: string) {
    const move = (p: string) => to + p.slice(from.length);
    for (const [p, size] of [...this.files]) {
      if (!under(p, from)) continue;
      this.files.delete(p);
      this.files.set(move(p), size);
    }
    for (const set of [this.folders, this.hidden]) {
      for (const p of [...set]) {
        if (!under(p, from)) continue;
        set.delete(p);
        set.add(move(p));
      }
    }
    this.addFolder(to);
  }
  dropFolder(folder: string) {
    for (const p of [...this.files.keys()]) if (under(p, folder)) this.files.delete(p);
    for (const p of [...this.folders]) if (under(p, folder)) this.folders.delete(p);
    for (const p of [...this.hidden]) if (under(p, folder)) this.hidden.delete(p);
  }
  listed(): Array<Pick<FileEntry, 'path' | 'name' | 'type' | 'size' | 'depth' | 'parent'>> {
    const entry = (path: string, type: 'file' | 'folder', size: number) => {
      const segments = path.split('/');
      return {
        path,
        name: segments.at(-1)!,
        type,
        size,
        depth: segments.length - 1,
        parent: segments.length > 1 ? segments.slice(0, -1).join('/') : null,
      };
    };
    return [
      ...[...this.folders].map((p) => entry(p, 'folder', 0)),
      ...[...this.files].map(([p, size]) => entry(p, 'file', size)),
    ].sort((a, b) => specOrder(a as FileEntry, b as FileEntry));
  }
}

describe.each(backends)('files list pages and totals (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'pages');
  const { freshSite } = fixture;

  /** Every page at `perPage`, each checked against the totals it states. */
  async function pages(
    api: FilesApi,
    perPage: number,
  ): Promise<{ entries: FileEntry[]; bodies: ListBody[] }> {
    const bodies: ListBody[] = [];
    for (let page = 1; ; page += 1) {
      const body = await okJson<ListBody>(await api.list(`?page=${page}&per_page=${perPage}`));
      bodies.push(body);
      if (body.pagination.is_last_page) break;
      expect(body.files).toHaveLength(perPage);
    }
    const entries = bodies.flatMap((b) => b.files);
    const total = bodies[0]!.pagination.total_items;
    for (const b of bodies) expect(b.pagination.total_items).toBe(total);
    expect(bodies).toHaveLength(Math.max(1, Math.ceil(total / perPage)));
    expect(entries).toHaveLength(total);
    return { entries, bodies };
  }

  /** The list (at several page sizes), the counters of list, storage-limits and hosting-info against the model. */
  async function expectSite(api: FilesApi, model: Model): Promise<void> {
    const expected = model.listed();
    for (const perPage of [1, 3, 7, 100]) {
      const { entries, bodies } = await pages(api, perPage);
      const shown = entries.map(({ path, name, type, size, depth, parent }) => ({
        path,
        name,
        type,
        size,
        depth,
        parent,
      }));
      expect(shown, `per_page=${perPage}`).toEqual(expected);
      expect(bodies[0]!.storage_folder.file_count).toBe(model.files.size + model.hidden.size);
    }
    const limits = await storageLimits(api);
    expect(limits.usage.files.current).toBe(model.files.size + model.hidden.size);
    const info = await okJson<{ storage_usage: { files_count: number } }>(await api.hostingInfo());
    expect(info.storage_usage.files_count).toBe(model.files.size + model.hidden.size);
  }

  it('keeps the spec order across every page boundary, folders and files mixed at each depth', async () => {
    const api = await freshSite();
    const model = new Model();
    // Names that differ only by case, names equal across folders, folders and files of one name
    // stem, and enough entries per depth that pages split each group (forwards and backwards).
    const paths = [
      'B.html',
      'a.html',
      'b.css',
      'A/index.html',
      'a-b/x.txt',
      'C/index.html',
      'c/index.html',
      'z/Z/index.html',
      'z/a.html',
      'z/B.txt',
      'docs/a.html',
      'docs/A/b/c.txt',
      'docs/_x.txt',
      'img/a.png',
      'img/A.png',
    ];
    for (const p of paths) {
      await put(api, p, p);
      model.addFile(p, Buffer.byteLength(p));
    }
    for (const f of ['empty', 'Empty2', 'z/empty', 'docs/A/b/deep']) {
      expect(await okJson(await api.createFolder({ path: f }))).toMatchObject({ success: true });
      model.addFolder(f);
    }
    await expectSite(api, model);
  });

  it('keeps totals exact through uploads, overwrites, renames, moves and deletes of files and folders', async () => {
    const api = await freshSite();
    const model = new Model();
    const upload = async (p: string, content: string) => {
      await put(api, p, content);
      model.addFile(p, Buffer.byteLength(content));
    };
    for (let i = 0; i < 12; i++) await upload(`f${i}/page${i % 3}.html`, `page ${i}`);
    await upload('index.html', 'home');
    await upload('index.html', 'home, overwritten'); // an overwrite: no new file
    await expectSite(api, model);

    // A file renamed into new folders; a file renamed within its folder.
    expect((await api.rename({ old_path: 'f1/page1.html', new_path: 'deep/er/moved.html' })).status).toBe(
      200,
    );
    model.addFile('deep/er/moved.html', model.files.get('f1/page1.html')!);
    model.files.delete('f1/page1.html');
    expect((await api.rename({ old_path: 'f2/page2.html', new_path: 'f2/renamed.html' })).status).toBe(200);
    model.addFile('f2/renamed.html', model.files.get('f2/page2.html')!);
    model.files.delete('f2/page2.html');
    await expectSite(api, model);

    // Files named .gitkeep (the upload refuses them: written as an older import would have, with the
    // counters an upload keeps) are never listed, and go with their folder.
    const keep = (path: string) => {
      const s = path.split('/');
      return {
        siteId: api.site.siteId,
        path,
        kind: 'file' as const,
        name: '.gitkeep',
        parent: s.length > 1 ? s.slice(0, -1).join('/') : null,
        depth: s.length - 1,
        size: 0,
        blobKey: createHash('sha256').update('').digest('hex'),
        contentType: 'application/octet-stream',
      };
    };
    const db = fixture.hp.services.store.db;
    await db.insert(siteFiles).values([keep('f3/.gitkeep'), keep('f4/.gitkeep')]);
    await db.execute(
      sql`update sites set file_count = file_count + 2, hidden_file_count = hidden_file_count + 2 where id = ${api.site.siteId}`,
    );
    model.hidden.add('f3/.gitkeep').add('f4/.gitkeep');
    await expectSite(api, model);
    expect((await api.delete('f4/.gitkeep')).status).toBe(200);
    model.hidden.delete('f4/.gitkeep');
    await expectSite(api, model);

    // Folders: created (with parents), moved deeper and back up, deleted with everything in them.
    expect((await api.createFolder({ path: 'new/a/b' })).status).toBe(200);
    model.addFolder('new/a/b');
    expect((await api.renameFolder({ old_path: 'f3', new_path: 'new/a/b/f3' })).status).toBe(200);
    model.moveFolder('f3', 'new/a/b/f3');
    await expectSite(api, model);
    // Into folders that do not exist yet: rename-folder creates them.
    expect((await api.renameFolder({ old_path: 'f6', new_path: 'fresh/place/f6' })).status).toBe(200);
    model.moveFolder('f6', 'fresh/place/f6');
    await expectSite(api, model);
    expect((await api.renameFolder({ old_path: 'new/a', new_path: 'top' })).status).toBe(200);
    model.moveFolder('new/a', 'top');
    await expectSite(api, model);
    expect((await api.deleteFolder('top')).status).toBe(200);
    model.dropFolder('top');
    expect((await api.delete('f5/page2.html')).status).toBe(200);
    model.files.delete('f5/page2.html');
    await expectSite(api, model);

    // A SQLite database is a listed file of the site (no bytes), with its folder.
    const installed = await sqliteApi(fixture.hp, api.site).install({ path: 'data/app.sqlite', name: 'app' });
    expect(installed.status).toBe(200);
    model.addFile('data/app.sqlite', 0);
    await expectSite(api, model);
  });
});
