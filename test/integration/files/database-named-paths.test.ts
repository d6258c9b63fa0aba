import { describe, expect, it } from 'vitest';
import { expectError, hostplaneWithFreshSites, listAll, okJson, put } from '../../support/files-api.js';
import { sqliteApi } from '../../support/sqlite-api.js';

/**
 * The edge never serves a path with a segment named like an SQLite database file (`x.db`,
 * `x.sqlite3-wal`…, any case), so the API refuses to create one: every URL it answers with works.
 */
describe('paths through a folder named like an SQLite database file', () => {
  const fixture = hostplaneWithFreshSites('pglite+fs', 'dbnamed');
  const rule = /named like an SQLite database file/;

  const videoForm = (path: string) => {
    const form = new FormData();
    form.append('path', path);
    form.append('file', new Blob([new Uint8Array(64)], { type: 'video/mp4' }), 'clip');
    return form;
  };

  it('are refused at creation with 400 "Invalid path" naming the rule, and nothing is stored', async () => {
    const api = await fixture.freshSite('standard');
    await put(api, 'page.html', 'page');
    await okJson(await api.createFolder({ path: 'docs' }));
    const before = await listAll(api);
    const refusals: Array<[string, () => Promise<Response>]> = [
      ['upload', () => api.upload({ path: 'backup.db/readme.txt', content: 'x' })],
      ['upload, upper case', () => api.upload({ path: 'a/Data.SQLITE3/b/readme.txt', content: 'x' })],
      ['upload, trailing dot', () => api.upload({ path: 'backup.db./readme.txt', content: 'x' })],
      ['upload, companion', () => api.upload({ path: 'x.sqlite-wal/readme.txt', content: 'x' })],
      ['video', () => api.video(videoForm('clips.db3/intro.mp4'))],
      ['create-folder', () => api.createFolder({ path: 'backup.db' })],
      ['create-folder, nested', () => api.createFolder({ path: 'a/store.sqlite/b' })],
      ['rename', () => api.rename({ old_path: 'page.html', new_path: 'old.db/page.html' })],
      ['rename-folder', () => api.renameFolder({ old_path: 'docs', new_path: 'docs.db' })],
      ['rename-folder, under', () => api.renameFolder({ old_path: 'docs', new_path: 'x.db-journal/docs' })],
    ];
    for (const [what, send] of refusals) {
      const body = await expectError(await send(), 400, 'Invalid path');
      expect(body.message, what).toMatch(rule);
    }
    expect(await listAll(api)).toEqual(before);
  });

  it('SQLite install refuses a database inside such a folder, and still makes a database at a .db path', async () => {
    const api = await fixture.freshSite('standard');
    const sqlite = sqliteApi(fixture.hp, api.site);
    const nested = await sqlite.install({ path: 'backup.db/app.sqlite', name: 'nested' });
    expect(nested.status).toBe(400);
    expect(nested.body).toMatchObject({ error: 'Invalid path', message: expect.stringMatching(rule) });
    expect((await sqlite.install({ path: 'data/app.db', name: 'app' })).status).toBe(200);
  });

  it('names that only look close are accepted, and their URLs serve', async () => {
    const api = await fixture.freshSite();
    for (const path of ['db/readme.txt', 'my.dbx/readme.txt', 'notes.db.d/readme.txt', 'sqlite/index.html']) {
      const body = await okJson(await api.upload({ path, content: `at ${path}` }));
      const served = await api.serve(new URL(body.url as string).pathname);
      expect(served.status, path).toBe(200);
      expect(await served.text()).toBe(`at ${path}`);
    }
  });
});
