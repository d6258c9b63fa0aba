import { describe, expect, it } from 'vitest';
import { plans } from '../../../src/platform/plans.js';
import { hostplaneWithFreshSites, listAll, storageLimits } from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';
import { sqliteApi } from '../../support/sqlite-api.js';

describe.each(backends)('a SQLite database as a file of its site on %s', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, `sqf-${backend.replace(/\W/g, '')}`);

  it('is listed and counted as a file (no URL, no bytes counted) and kept out of the files API', async () => {
    const files = await fixture.freshSite();
    const api = sqliteApi(fixture.hp, files.site);
    const before = await storageLimits(files);
    await api.token({ path: 'data/app.sqlite', name: 'app' });
    const entries = await listAll(files);
    expect(entries.find((e) => e.path === 'data')).toMatchObject({ type: 'folder' });
    expect(entries.find((e) => e.path === 'data/app.sqlite')).toMatchObject({
      type: 'file',
      size: 0,
      url: null,
    });
    const after = await storageLimits(files);
    expect(after.usage.files.current).toBe(before.usage.files.current + 1);
    expect(after.usage.storage.current).toBe(before.usage.storage.current);
    // A second token for the same database adds nothing.
    await api.token({ path: 'data/app.sqlite', name: 'again' });
    expect((await storageLimits(files)).usage.files.current).toBe(after.usage.files.current);

    const refused = [
      await files.get('data/app.sqlite'),
      await files.delete('data/app.sqlite'),
      await files.rename({ old_path: 'data/app.sqlite', new_path: 'public/app.html' }),
      await files.renameFolder({ old_path: 'data', new_path: 'public' }),
      await files.deleteFolder('data'),
      // A folder at or under the database's path is named like a database file: no new path may be (400).
      await files.createFolder({ path: 'data/app.sqlite' }),
      await files.upload({ path: 'data/app.sqlite/index.html', content: '<p>x</p>' }),
    ];
    expect(refused.map((res) => res.status)).toEqual([409, 409, 409, 409, 409, 400, 400]);
    expect((await listAll(files)).map((e) => e.path).sort()).toEqual(['data', 'data/app.sqlite']);
  });

  it('is never served by the edge, under any spelling', async () => {
    const files = await fixture.freshSite();
    const api = sqliteApi(fixture.hp, files.site);
    const token = await api.token({ path: 'app.db', name: 'app', requireUserAuth: false });
    await api.scoped(token, 'POST', '/api/v1/sqlite/exec', { sql: 'CREATE TABLE secret (x)' });
    for (const path of [
      '/app.db',
      '/APP.DB',
      '/app.db-wal',
      '/app.db-shm',
      '/app%2Edb',
      '/./app.db',
      '/app.db/',
    ]) {
      const res = await files.serve(path);
      expect(res.status, path).toBe(404);
      expect(await res.text()).not.toContain('SQLite format');
    }
  });

  it('refuses an install the files cannot take, and takes nothing', async () => {
    const files = await fixture.freshSite();
    const api = sqliteApi(fixture.hp, files.site);
    expect((await files.upload({ path: 'page.html', content: '<p>x</p>' })).status).toBe(200);
    const under = await api.install({ path: 'page.html/app.db', name: 'x' });
    expect(under.status).toBe(409);
    // The plan's database count refuses a second path: its file entry goes too.
    await api.token({ path: 'one.db', name: 'one' });
    const second = await api.install({ path: 'two.db', name: 'two' });
    expect(second.status).toBe(403);
    expect((await listAll(files)).map((e) => e.path).sort()).toEqual(['one.db', 'page.html']);
    const saved = plans.free.maxFiles;
    plans.free.maxFiles = 2;
    try {
      const other = await fixture.freshSite();
      await other.upload({ path: 'a.html', content: 'a' });
      await other.upload({ path: 'b.html', content: 'b' });
      const full = await sqliteApi(fixture.hp, other.site).install({ path: 'app.db', name: 'x' });
      expect(full.status).toBe(403);
      expect(full.body.error).toBe('File limit exceeded');
      const tokens = await sqliteApi(fixture.hp, other.site).call('GET', '/api/v1/sqlite/auth/tokens', {
        headers: { 'x-api-key': other.site.apiKey },
      });
      expect(tokens.body.tokens).toEqual([]);
    } finally {
      plans.free.maxFiles = saved;
    }
  });
});
